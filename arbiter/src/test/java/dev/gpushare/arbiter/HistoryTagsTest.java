package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class HistoryTagsTest {

  private static final String NS = "n".repeat(63);

  @Test
  void aPodsTagIsItsNamespaceAndNameReadableWhileItFitsTheColumn() {
    assertEquals("pod:default/a", HistoryTags.of("default", "a"));
    assertEquals("pod:default/a", HistoryTags.of(new PodKey("default", "a", "u1")));
    assertEquals(
        HistoryTags.of(new PodKey("default", "a", "u1")),
        HistoryTags.of(new PodKey("default", "a", "u2")),
        "every pod of a name shares its history");
    String edge = HistoryTags.of(NS, "e".repeat(188));
    assertEquals("pod:" + NS + "/" + "e".repeat(188), edge);
    assertEquals(HistoryTags.MAX_LENGTH, edge.length());
  }

  @Test
  void aLongerOneIsTheSha256OfTheName() {
    String name = "e".repeat(189);
    String tag = HistoryTags.of(NS, name);
    assertTrue(tag.matches("pod-sha256:[0-9a-f]{64}"), tag);
    assertEquals(75, tag.length());
    assertEquals("pod-sha256:" + sha256Of(NS + "/" + name), tag, "the digest of ns/name");
    assertEquals(tag, HistoryTags.of(NS, name), "the same every time");
    assertNotEquals(tag, HistoryTags.of(NS, "f".repeat(189)));
    String longest = ("p".repeat(62) + ".").repeat(4) + "q";
    assertEquals(253, longest.length());
    assertTrue(HistoryTags.of(NS, longest).length() <= HistoryTags.MAX_LENGTH);
    assertEquals(
        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
        sha256Of("hello"),
        "the digest as `printf hello | sha256sum` computes it");
  }

  private static String sha256Of(String text) {
    try {
      java.security.MessageDigest d = java.security.MessageDigest.getInstance("SHA-256");
      return java.util.HexFormat.of()
          .formatHex(d.digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void entityIdsAreReadAsNamespaceNameAndUid() {
    assertEquals("pod:team/a.b", HistoryTags.ofEntityId("team/a.b/uid-1"));
    assertNull(HistoryTags.ofEntityId("team/a"), "no uid: not an entity id");
    assertNull(HistoryTags.ofEntityId(null));
    assertNull(HistoryTags.ofEntityId("/a/u"));
    assertEquals(
        Set.of("pod:t/a", "pod:t/b"),
        HistoryTags.ofEntityIds(List.of("t/a/u1", "t/b/u2", "t/a/u3", "bad")));
  }
}
