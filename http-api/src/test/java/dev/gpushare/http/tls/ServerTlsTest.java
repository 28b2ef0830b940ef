package dev.gpushare.http.tls;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.http.launch.LaunchException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.List;
import javax.net.ssl.SSLEngine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Loading the webhook's PEM pair with the JDK alone: the encodings Secrets hold, the startup errors
 * that name the flag and the file, and reloading after a renewal. The pairs under {@code
 * admission/tls/} are test-only (see the README there).
 */
public class ServerTlsTest {
  @TempDir Path dir;

  public static Path tls(String file) {
    try {
      return Path.of(ServerTlsTest.class.getResource("/admission/tls/" + file).toURI());
    } catch (URISyntaxException e) {
      throw new AssertionError(e);
    }
  }

  private static LaunchException refused(Path cert, Path key) {
    return assertThrows(LaunchException.class, () -> ServerTls.load("webhook", cert, key));
  }

  @ParameterizedTest
  @CsvSource({
    "webhook.crt, webhook.key, CN=gpushare-webhook-test, RSA",
    "webhook.crt, webhook-rsa.key, CN=gpushare-webhook-test, RSA",
    "ec.crt, ec.key, CN=gpushare-webhook-ec-test, EC",
    "ec.crt, ec-sec1.key, CN=gpushare-webhook-ec-test, EC"
  })
  void pkcs8Pkcs1AndSec1KeysLoad(String cert, String key, String subject, String algorithm) {
    ServerTls loaded = ServerTls.load("webhook", tls(cert), tls(key));
    assertEquals(subject, loaded.certificate().getSubjectX500Principal().getName());
    assertEquals(algorithm, loaded.certificate().getPublicKey().getAlgorithm());
    SSLEngine engine = loaded.newEngine();
    assertFalse(engine.getUseClientMode());
    assertEquals(List.of("TLSv1.3", "TLSv1.2"), List.of(engine.getEnabledProtocols()));
  }

  @Test
  void aKeyOfAnotherCertificateIsRefusedNamingBothFiles() {
    Path cert = tls("other.crt");
    Path key = tls("webhook.key");
    String message = refused(cert, key).getMessage();
    assertTrue(
        message.startsWith(
            "--tls-key "
                + key
                + ": the RSA private key does not belong to the certificate of --tls-cert "
                + cert
                + " (CN=gpushare-other-test, RSA public key); want the key the certificate was"
                + " issued for"),
        message);
    String otherAlgorithm = refused(tls("webhook.crt"), tls("ec.key")).getMessage();
    assertTrue(otherAlgorithm.contains("the EC private key does not belong"), otherAlgorithm);
  }

  @Test
  void missingFilesAndDirectoriesAreRefused() {
    Path none = dir.resolve("tls.crt");
    assertTrue(
        refused(none, tls("webhook.key"))
            .getMessage()
            .startsWith(
                "--tls-cert "
                    + none
                    + ": no such file; want the PEM file of the serving"
                    + " certificate (tls.crt of a kubernetes.io/tls Secret"));
    assertTrue(
        refused(tls("webhook.crt"), dir)
            .getMessage()
            .startsWith(
                "--tls-key "
                    + dir
                    + ": not a regular file; want the PEM file of its"
                    + " private key"));
  }

  @Test
  void filesWithTheWrongContentAreRefusedSayingWhatTheyHold() throws Exception {
    String keyAsCert = refused(tls("webhook.key"), tls("webhook.key")).getMessage();
    assertTrue(
        keyAsCert.startsWith(
            "--tls-cert "
                + tls("webhook.key")
                + ": the file holds only PRIVATE KEY; want PEM"
                + " certificates (BEGIN CERTIFICATE)"),
        keyAsCert);
    String certAsKey = refused(tls("webhook.crt"), tls("webhook.crt")).getMessage();
    assertTrue(
        certAsKey.startsWith(
            "--tls-key "
                + tls("webhook.crt")
                + ": the file holds only CERTIFICATE; want an"
                + " unencrypted PEM private key: PKCS#8 (BEGIN PRIVATE KEY), PKCS#1 RSA"),
        certAsKey);
    Path empty = Files.writeString(dir.resolve("empty.key"), "");
    assertTrue(
        refused(tls("webhook.crt"), empty).getMessage().contains(": the file holds no PEM block;"));
    Path der = Files.write(dir.resolve("der.crt"), new byte[] {0x30, (byte) 0x82, 0x01, 0x00});
    assertTrue(
        refused(der, tls("webhook.key")).getMessage().contains(": the file holds no PEM block;"));
  }

  @Test
  void encryptedKeysAreRefusedWithHowToDecrypt() throws Exception {
    Path pkcs8 =
        Files.writeString(
            dir.resolve("enc.key"),
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n");
    String message = refused(tls("webhook.crt"), pkcs8).getMessage();
    assertTrue(message.contains("holds an encrypted key (BEGIN ENCRYPTED PRIVATE KEY)"), message);
    Path pkcs1 =
        Files.writeString(
            dir.resolve("enc-rsa.key"),
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
                + "DEK-Info: AES-128-CBC,00\n\nMIIB\n-----END RSA PRIVATE KEY-----\n");
    assertTrue(
        refused(tls("webhook.crt"), pkcs1).getMessage().contains("(Proc-Type: 4,ENCRYPTED)"));
  }

  @Test
  void aCertificateChainServesItsFirstCertificateAndMustBeInOrder() throws Exception {
    ServerTls chain = ServerTls.load("webhook", tls("chain.crt"), tls("chain.key"));
    assertEquals(
        "CN=gpushare-webhook-chain-test", chain.certificate().getSubjectX500Principal().getName());
    Path unrelated =
        Files.writeString(
            dir.resolve("unrelated.crt"),
            Files.readString(tls("webhook.crt")) + Files.readString(tls("other.crt")));
    assertEquals(
        "--tls-cert "
            + unrelated
            + ": certificate 2 (CN=gpushare-other-test) did not issue certificate 1"
            + " (CN=gpushare-webhook-test, issued by CN=gpushare-webhook-test); want the serving"
            + " certificate first, then each issuer in turn",
        refused(unrelated, tls("webhook.key")).getMessage());
  }

  @Test
  void renewedFilesServeNewConnectionsAndABrokenRenewalKeepsThePreviousPair() throws Exception {
    Path cert = dir.resolve("tls.crt");
    Path key = dir.resolve("tls.key");
    Files.copy(tls("webhook.crt"), cert);
    Files.copy(tls("webhook.key"), key);
    Instant loaded = Instant.parse("2026-01-01T00:00:00Z");
    Files.setLastModifiedTime(cert, FileTime.from(loaded));
    Files.setLastModifiedTime(key, FileTime.from(loaded));
    ServerTls tls = ServerTls.load("webhook", cert, key);
    assertEquals("CN=gpushare-webhook-test", tls.certificate().getSubjectX500Principal().getName());

    replace(tls("ec.crt"), cert, loaded.plusSeconds(60));
    replace(tls("ec.key"), key, loaded.plusSeconds(60));
    tls.newEngine();
    assertEquals(
        "CN=gpushare-webhook-ec-test", tls.certificate().getSubjectX500Principal().getName());

    // A certificate without its key (a renewal read halfway): the pair in use stays.
    replace(tls("other.crt"), cert, loaded.plusSeconds(120));
    tls.newEngine();
    assertEquals(
        "CN=gpushare-webhook-ec-test", tls.certificate().getSubjectX500Principal().getName());

    Files.delete(key);
    tls.newEngine();
    assertEquals(
        "CN=gpushare-webhook-ec-test", tls.certificate().getSubjectX500Principal().getName());
  }

  private static void replace(Path from, Path to, Instant modified) throws Exception {
    Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
    Files.setLastModifiedTime(to, FileTime.from(modified));
  }
}
