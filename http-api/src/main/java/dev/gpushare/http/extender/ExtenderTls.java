package dev.gpushare.http.extender;

import dev.gpushare.http.LaunchException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManagerFactory;
import org.apache.pekko.http.javadsl.ConnectionContext;
import org.apache.pekko.http.javadsl.HttpsConnectionContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The scheduler extender's mutual TLS: the server proves itself with a certificate and key (PEM; in
 * the deploy the webhook's pair, whose names are the gpushare Service's), and every client must
 * present a certificate issued by the client CA ({@code clientCaFile}, PEM, one or more CA
 * certificates) for client authentication (extended key usage {@code clientAuth} when the
 * certificate lists its usages). kube-scheduler's extender client supports exactly this: its {@code
 * tlsConfig} carries {@code certFile}/{@code keyFile}/{@code caFile} (or their {@code *Data}), and
 * no bearer token. A connection without such a certificate fails in the handshake; no request is
 * read.
 *
 * <p>Keys: PKCS#8 PEM ({@code BEGIN PRIVATE KEY}), RSA or EC — what cert-manager writes with {@code
 * encoding: PKCS8} and {@code deploy/bootstrap-tls.sh} writes. Renewal: each new connection
 * compares the three files' modification times and sizes with those last loaded and loads them
 * again when they changed; a set that does not load (read halfway through a Secret swap) is logged
 * and the previous one kept until the files change again. Protocols: TLS 1.3 and 1.2.
 */
public final class ExtenderTls {
  private static final Logger LOG = LoggerFactory.getLogger(ExtenderTls.class);
  private static final String[] PROTOCOLS = {"TLSv1.3", "TLSv1.2"};
  private static final Pattern PKCS8 =
      Pattern.compile("-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\\s]+)-----END PRIVATE KEY-----");

  private final Path certFile;
  private final Path keyFile;
  private final Path clientCaFile;
  private Loaded current;
  private List<Stamp> lastTried;

  private record Loaded(SSLContext context, X509Certificate certificate, List<Stamp> stamps) {}

  private record Stamp(Instant modified, long size) {}

  private ExtenderTls(Path certFile, Path keyFile, Path clientCaFile, Loaded loaded) {
    this.certFile = certFile;
    this.keyFile = keyFile;
    this.clientCaFile = clientCaFile;
    this.current = loaded;
    this.lastTried = loaded.stamps();
  }

  /**
   * Reads and checks the three files; a {@link LaunchException} names the file and what is wrong.
   *
   * @param certFile the server's certificate, then any intermediates (PEM)
   * @param keyFile its private key (PKCS#8 PEM)
   * @param clientCaFile the CA certificate(s) that issue the scheduler's client certificate (PEM)
   */
  public static ExtenderTls load(Path certFile, Path keyFile, Path clientCaFile) {
    return new ExtenderTls(certFile, keyFile, clientCaFile, read(certFile, keyFile, clientCaFile));
  }

  /** For the extender's HTTPS server: one engine per connection, client certificate required. */
  public HttpsConnectionContext serverContext() {
    return ConnectionContext.httpsServer(this::newEngine);
  }

  /** The serving certificate in use (the leaf). */
  public synchronized X509Certificate certificate() {
    return current.certificate();
  }

  SSLEngine newEngine() {
    SSLEngine engine = refreshed().createSSLEngine();
    engine.setUseClientMode(false);
    engine.setNeedClientAuth(true);
    engine.setEnabledProtocols(PROTOCOLS);
    return engine;
  }

  private synchronized SSLContext refreshed() {
    List<Stamp> stamps;
    try {
      stamps = List.of(stamp(certFile), stamp(keyFile), stamp(clientCaFile));
    } catch (IOException e) {
      LOG.warn("cannot check the extender's TLS files for renewal: {}; keeping the loaded ones", e);
      return current.context();
    }
    if (!stamps.equals(lastTried)) {
      lastTried = stamps;
      try {
        current = read(certFile, keyFile, clientCaFile);
        LOG.info(
            "scheduler extender TLS files reloaded: {}, valid until {}",
            current.certificate().getSubjectX500Principal().getName(),
            current.certificate().getNotAfter().toInstant());
      } catch (LaunchException e) {
        LOG.warn(
            "the scheduler extender's TLS files changed but do not load ({}); keeping the loaded"
                + " ones until they change again",
            e.getMessage());
      }
    }
    return current.context();
  }

  private static Loaded read(Path certFile, Path keyFile, Path clientCaFile) {
    List<Stamp> stamps = new ArrayList<>();
    List<X509Certificate> chain = certificates(certFile, "the extender's serving certificate");
    List<X509Certificate> clientCas = certificates(clientCaFile, "the client CA certificate(s)");
    PrivateKey key = privateKey(keyFile, chain.get(0));
    try {
      stamps.add(stamp(certFile));
      stamps.add(stamp(keyFile));
      stamps.add(stamp(clientCaFile));
      char[] password = new char[0];
      KeyStore identity = KeyStore.getInstance("PKCS12");
      identity.load(null, null);
      identity.setKeyEntry("extender", key, password, chain.toArray(X509Certificate[]::new));
      KeyManagerFactory keys =
          KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      keys.init(identity, password);
      KeyStore trusted = KeyStore.getInstance("PKCS12");
      trusted.load(null, null);
      for (int i = 0; i < clientCas.size(); i++) {
        trusted.setCertificateEntry("client-ca-" + i, clientCas.get(i));
      }
      TrustManagerFactory trust = TrustManagerFactory.getInstance("PKIX");
      trust.init(trusted);
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(keys.getKeyManagers(), trust.getTrustManagers(), new SecureRandom());
      return new Loaded(context, chain.get(0), List.copyOf(stamps));
    } catch (GeneralSecurityException | IOException e) {
      throw new LaunchException(
          certFile
              + ", "
              + keyFile
              + " and "
              + clientCaFile
              + ": the JDK cannot serve mutual TLS with them ("
              + e
              + "); want a PEM certificate, its PKCS#8 key and the client CA certificate(s)");
    }
  }

  private static List<X509Certificate> certificates(Path file, String what) {
    byte[] bytes = bytes(file, what);
    List<X509Certificate> out = new ArrayList<>();
    try {
      for (Certificate c :
          CertificateFactory.getInstance("X.509")
              .generateCertificates(new ByteArrayInputStream(bytes))) {
        out.add((X509Certificate) c);
      }
    } catch (GeneralSecurityException e) {
      throw new LaunchException(
          file + " (" + what + "): not PEM certificates (" + e.getMessage() + ")");
    }
    if (out.isEmpty()) {
      throw new LaunchException(
          file + " (" + what + "): no certificate; want PEM blocks BEGIN CERTIFICATE");
    }
    return out;
  }

  private static PrivateKey privateKey(Path file, X509Certificate leaf) {
    String text =
        new String(bytes(file, "the serving certificate's key"), StandardCharsets.US_ASCII);
    Matcher m = PKCS8.matcher(text);
    if (!m.find()) {
      throw new LaunchException(
          file
              + ": no PKCS#8 private key; want a PEM block BEGIN PRIVATE KEY (cert-manager"
              + " encoding: PKCS8, or openssl pkcs8 -topk8 -nocrypt)");
    }
    byte[] der = Base64.getMimeDecoder().decode(m.group(1));
    String algorithm = leaf.getPublicKey().getAlgorithm();
    try {
      return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
    } catch (GeneralSecurityException e) {
      throw new LaunchException(
          file + ": not a " + algorithm + " PKCS#8 key for the certificate (" + e + ")");
    }
  }

  private static byte[] bytes(Path file, String what) {
    try {
      return Files.readAllBytes(file);
    } catch (IOException e) {
      throw new LaunchException(file + " (" + what + ") cannot be read: " + e);
    }
  }

  private static Stamp stamp(Path file) throws IOException {
    return new Stamp(Files.getLastModifiedTime(file).toInstant(), Files.size(file));
  }
}
