package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/**
 * A pod's sharing is written in events, snapshots and cluster messages as the one JSON object of
 * 0.1 (the recorded journals of src-test UpgradeTest hold it): the sealed family reads those texts
 * back and writes them byte for byte.
 */
class PodSharingJsonTest {
  private static final ObjectMapper JSON = JsonMappers.plain();

  /** As written by 0.1 (journal-44fda3f) and every version since. */
  private static final String SHARED =
      "{\"kind\":\"SHARED\",\"policy\":\"share-pool\",\"requests\":{\"core\":10,\"memory\":10},"
          + "\"limits\":{\"core\":80,\"memory\":80},\"exclusiveGpus\":0,\"container\":\"main\"}";

  private static final String EXCLUSIVE =
      "{\"kind\":\"EXCLUSIVE\",\"policy\":null,\"requests\":null,\"limits\":null,"
          + "\"exclusiveGpus\":2,\"container\":null}";

  private static final String PLAIN =
      "{\"kind\":\"PLAIN\",\"policy\":null,\"requests\":null,\"limits\":null,"
          + "\"exclusiveGpus\":0,\"container\":null}";

  record Holder(PodKey key, PodSharing spec) {}

  @Test
  void the_old_texts_read_as_the_kinds_and_write_back_byte_for_byte() throws Exception {
    PodSharing shared =
        PodSharing.shared(SharePolicy.SHARE_POOL, new Share(10, 10), new Share(80, 80), "main");
    assertEquals(shared, JSON.readValue(SHARED, PodSharing.class));
    assertEquals(PodSharing.exclusive(2), JSON.readValue(EXCLUSIVE, PodSharing.class));
    assertEquals(PodSharing.PLAIN, JSON.readValue(PLAIN, PodSharing.class));

    assertEquals(SHARED, JSON.writeValueAsString(shared));
    assertEquals(EXCLUSIVE, JSON.writeValueAsString(PodSharing.exclusive(2)));
    assertEquals(PLAIN, JSON.writeValueAsString(PodSharing.PLAIN));
  }

  @Test
  void inside_an_event_the_field_keeps_its_form() throws Exception {
    String event =
        "{\"key\":{\"namespace\":\"default\",\"name\":\"a\",\"uid\":\"u-1\"},\"spec\":"
            + EXCLUSIVE
            + "}";
    Holder read = JSON.readValue(event, Holder.class);
    assertEquals(PodSharing.exclusive(2), read.spec());
    assertTrue(JSON.writeValueAsString(read).endsWith(",\"spec\":" + EXCLUSIVE + "}"));
  }

  @Test
  void a_text_without_a_kind_or_with_a_shared_pod_missing_its_policy_is_refused() {
    IllegalArgumentException noKind =
        assertThrows(
            IllegalArgumentException.class,
            () -> JSON.readValue("{\"exclusiveGpus\":1}", PodSharing.class));
    assertTrue(noKind.getMessage().contains("\"kind\""), noKind.getMessage());
    IllegalArgumentException noPolicy =
        assertThrows(
            IllegalArgumentException.class,
            () -> JSON.readValue(SHARED.replace("\"share-pool\"", "null"), PodSharing.class));
    assertTrue(noPolicy.getMessage().contains("needs a policy"), noPolicy.getMessage());
  }

  @Test
  void admission_says_which_kind_of_refusal_it_is() {
    NodeAdmission.NodeState sharing =
        new NodeAdmission.NodeState("n1", SharePolicy.SHARE_POOL, 1, new Share(90, 90), 1, 0);
    Refusal label =
        NodeAdmission.refusal(
            sharing,
            PodSharing.shared(SharePolicy.STATIC, new Share(5, 5), new Share(5, 5), "main"));
    assertEquals(Refusal.Kind.INVALID, label.kind());
    assertEquals("metadata.labels[" + SharePolicy.LABEL + "]", label.field());
    Refusal room =
        NodeAdmission.refusal(
            sharing,
            PodSharing.shared(SharePolicy.SHARE_POOL, new Share(20, 20), new Share(20, 20), "m"));
    assertEquals(Refusal.Kind.CONFLICT, room.kind());
    assertEquals("spec.containers.resources.requests", room.field());
    Refusal whole = NodeAdmission.refusal(sharing, PodSharing.exclusive(1));
    assertEquals(Refusal.Kind.CONFLICT, whole.kind());
    assertEquals(null, NodeAdmission.refusal(sharing, PodSharing.PLAIN));
  }

  @Test
  void a_checkpointed_pod_writes_its_mode_last_and_reads_back() throws Exception {
    PodSharing checkpointed =
        PodSharing.shared(
            SharePolicy.SHARE_POOL,
            new Share(10, 10),
            new Share(80, 80),
            "main",
            PreemptionMode.CHECKPOINT);
    String text = SHARED.substring(0, SHARED.length() - 1) + ",\"preemption\":\"checkpoint\"}";
    assertEquals(text, JSON.writeValueAsString(checkpointed));
    assertEquals(checkpointed, JSON.readValue(text, PodSharing.class));
  }

  @Test
  void a_signalled_pod_writes_the_text_of_0_1_byte_for_byte() throws Exception {
    PodSharing.Shared signalled =
        PodSharing.shared(
            SharePolicy.SHARE_POOL,
            new Share(10, 10),
            new Share(80, 80),
            "main",
            PreemptionMode.SIGNAL);
    assertEquals(SHARED, JSON.writeValueAsString(signalled));
    assertEquals(
        signalled,
        new PodSharing.Shared(
            SharePolicy.SHARE_POOL, new Share(10, 10), new Share(80, 80), "main"));
    assertEquals(
        PreemptionMode.SIGNAL,
        new PodSharing.Shared(
                SharePolicy.SHARE_POOL, new Share(10, 10), new Share(80, 80), "main", null)
            .preemption());
    PodSharing.Shared read = (PodSharing.Shared) JSON.readValue(SHARED, PodSharing.class);
    assertEquals(PreemptionMode.SIGNAL, read.preemption());
    String explicit = SHARED.substring(0, SHARED.length() - 1) + ",\"preemption\":\"signal\"}";
    assertEquals(signalled, JSON.readValue(explicit, PodSharing.class));
    assertEquals(SHARED, JSON.writeValueAsString(JSON.readValue(explicit, PodSharing.class)));
  }

  @Test
  void an_unknown_preemption_mode_is_refused_naming_it_and_the_accepted_ones() {
    String text = SHARED.substring(0, SHARED.length() - 1) + ",\"preemption\":\"Checkpoint\"}";
    Exception e = assertThrows(Exception.class, () -> JSON.readValue(text, PodSharing.class));
    String message = e.getMessage();
    assertTrue(
        message.contains(
            "unknown preemption mode \"Checkpoint\": want \"checkpoint\" or \"signal\""),
        message);
    IllegalArgumentException direct =
        assertThrows(IllegalArgumentException.class, () -> PreemptionMode.of("SIGNAL"));
    assertEquals(
        "unknown preemption mode \"SIGNAL\": want \"checkpoint\" or \"signal\"",
        direct.getMessage());
  }

  @Test
  void the_mode_is_written_as_its_annotation_value() throws Exception {
    assertEquals("\"checkpoint\"", JSON.writeValueAsString(PreemptionMode.CHECKPOINT));
    assertEquals("\"signal\"", JSON.writeValueAsString(PreemptionMode.SIGNAL));
    assertEquals(PreemptionMode.CHECKPOINT, JSON.readValue("\"checkpoint\"", PreemptionMode.class));
    assertEquals("gpushare.dev/preemption", PreemptionMode.ANNOTATION);
    assertEquals("checkpoint", PreemptionMode.CHECKPOINT.value());
  }
}
