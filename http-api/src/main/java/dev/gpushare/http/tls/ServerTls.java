package dev.gpushare.http.tls;

import dev.gpushare.http.launch.LaunchException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManagerFactory;
import org.apache.pekko.http.javadsl.ConnectionContext;
import org.apache.pekko.http.javadsl.HttpsConnectionContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A listener's TLS server identity, reloaded when its files change: the one loader of the admission
 * webhook and the scheduler extender. The identity comes from the PEM files of {@code --tls-cert}
 * (the serving certificate, then any intermediates) and {@code --tls-key} (its private key; see
 * {@link Pem} for the encodings read). In production the files come from the deploy (a {@code
 * kubernetes.io/tls} Secret written by cert-manager or by hand), mounted read-only. The API server
 * requires HTTPS for admission webhooks and checks the certificate against the webhook
 * configuration's {@code caBundle} and the Service's DNS name ({@code SERVICE.NAMESPACE.svc}).
 *
 * <p>With a client CA ({@link #mutual}, the extender's {@code --extender-client-ca}: PEM, one or
 * more CA certificates) every client must present a certificate that CA issued (extended key usage
 * {@code clientAuth} when the certificate lists its usages): kube-scheduler's extender client
 * presents exactly this ({@code tlsConfig.certFile/keyFile/caFile}) and no bearer token. A
 * connection without such a certificate fails in the handshake; no request is read.
 *
 * <p>{@link #load} and {@link #mutual} read and check the files up front: a missing or unreadable
 * file, a file without the expected PEM block, or a key that does not belong to the certificate
 * (proved by a signature made with the key and checked with the certificate's public key) is a
 * {@link LaunchException} naming the flag, the file and what is accepted. A certificate outside its
 * validity period is only logged: a renewal may be on its way.
 *
 * <p>Renewal: each new connection first compares the files' modification times and sizes with those
 * last loaded; when they changed (the kubelet swaps a renewed Secret's files in place), the files
 * are loaded again and serve every later connection. Files that do not load (read halfway through a
 * swap, say) are logged and the previous identity kept until the files change again. Protocols: TLS
 * 1.3 and 1.2.
 */
public final class ServerTls {
  private static final Logger LOG = LoggerFactory.getLogger(ServerTls.class);
  private static final String[] PROTOCOLS = {"TLSv1.3", "TLSv1.2"};

  /** The flag that names the client CA file. */
  public static final String CLIENT_CA_FLAG = "--extender-client-ca";

  private final String listener;
  private final Path certFile;
  private final Path keyFile;
  private final Optional<Path> clientCaFile;
  private Identity current;
  private List<Stamp> lastTried;

  /** One loaded pair: what serves connections. */
  private record Identity(SSLContext context, X509Certificate certificate, List<Stamp> stamps) {}

  /** What tells a changed file from an unchanged one. */
  private record Stamp(Instant modified, long size) {}

  private ServerTls(
      String listener,
      Path certFile,
      Path keyFile,
      Optional<Path> clientCaFile,
      Identity identity) {
    this.listener = listener;
    this.certFile = certFile;
    this.keyFile = keyFile;
    this.clientCaFile = clientCaFile;
    this.current = identity;
    this.lastTried = identity.stamps();
  }

  /**
   * Server TLS without client certificates (the webhook). Reads and checks the pair; a {@link
   * LaunchException} names the flag at fault.
   *
   * @param listener what serves with it, for log lines ("webhook")
   */
  public static ServerTls load(String listener, Path certFile, Path keyFile) {
    return start(listener, certFile, keyFile, Optional.empty());
  }

  /**
   * Mutual TLS (the scheduler extender): as {@link #load}, and every client must present a
   * certificate issued by a CA of {@code clientCaFile}.
   */
  public static ServerTls mutual(String listener, Path certFile, Path keyFile, Path clientCaFile) {
    return start(listener, certFile, keyFile, Optional.of(clientCaFile));
  }

  private static ServerTls start(
      String listener, Path certFile, Path keyFile, Optional<Path> clientCaFile) {
    Identity identity = identity(certFile, keyFile, clientCaFile);
    warnIfOutOfValidity(listener, identity.certificate(), certFile);
    return new ServerTls(listener, certFile, keyFile, clientCaFile, identity);
  }

  /** Whether clients must present a certificate of the client CA. */
  public boolean requiresClientCertificate() {
    return clientCaFile.isPresent();
  }

  /** For the listener's HTTPS server: one engine per connection, from the current identity. */
  public HttpsConnectionContext serverContext() {
    return ConnectionContext.httpsServer(this::newEngine);
  }

  /** The serving certificate in use (the leaf). */
  public synchronized X509Certificate certificate() {
    return current.certificate();
  }

  /** The SSLContext in use. */
  public synchronized SSLContext sslContext() {
    return current.context();
  }

  SSLEngine newEngine() {
    SSLEngine engine = refreshed().createSSLEngine();
    engine.setUseClientMode(false);
    engine.setNeedClientAuth(clientCaFile.isPresent());
    engine.setEnabledProtocols(PROTOCOLS);
    return engine;
  }

  /** The current context, after loading the files again if they changed since last tried. */
  synchronized SSLContext refreshed() {
    List<Stamp> stamps;
    try {
      stamps = new ArrayList<>(List.of(stamp(certFile), stamp(keyFile)));
      if (clientCaFile.isPresent()) {
        stamps.add(stamp(clientCaFile.get()));
      }
    } catch (IOException e) {
      LOG.warn(
          "cannot check the {}'s TLS files ({}, {}) for renewal: {}; serving the certificate"
              + " loaded before",
          listener,
          certFile,
          keyFile,
          e.toString());
      return current.context();
    }
    if (!stamps.equals(lastTried)) {
      lastTried = stamps;
      try {
        Identity renewed = identity(certFile, keyFile, clientCaFile);
        current = renewed;
        warnIfOutOfValidity(listener, renewed.certificate(), certFile);
        LOG.info(
            "{} TLS certificate reloaded from {}: {}, valid until {}",
            listener,
            certFile,
            renewed.certificate().getSubjectX500Principal().getName(),
            renewed.certificate().getNotAfter().toInstant());
      } catch (LaunchException e) {
        LOG.warn(
            "the {}'s TLS files changed but do not load ({}); serving the certificate loaded"
                + " before until they change again",
            listener,
            e.getMessage());
      }
    }
    return current.context();
  }

  private static Identity identity(Path certFile, Path keyFile, Optional<Path> clientCaFile) {
    List<Stamp> stamps = new ArrayList<>();
    stamps.add(checkedStamp("--tls-cert", certFile, "the serving certificate"));
    stamps.add(checkedStamp("--tls-key", keyFile, "its private key"));
    List<X509Certificate> chain;
    try {
      chain = Pem.certificates(read("--tls-cert", certFile));
    } catch (IllegalArgumentException e) {
      throw new LaunchException("--tls-cert " + certFile + ": the file " + e.getMessage());
    }
    checkChain(chain, certFile);
    X509Certificate leaf = chain.get(0);
    PrivateKey key;
    try {
      key = Pem.privateKey(read("--tls-key", keyFile), leaf.getPublicKey().getAlgorithm());
    } catch (IllegalArgumentException e) {
      throw new LaunchException("--tls-key " + keyFile + ": the file " + e.getMessage());
    }
    checkPair(leaf, key, certFile, keyFile);
    List<X509Certificate> clientCas = List.of();
    if (clientCaFile.isPresent()) {
      Path file = clientCaFile.get();
      stamps.add(checkedStamp(CLIENT_CA_FLAG, file, "the client CA certificate(s)"));
      try {
        clientCas = Pem.certificates(read(CLIENT_CA_FLAG, file));
      } catch (IllegalArgumentException e) {
        throw new LaunchException(CLIENT_CA_FLAG + " " + file + ": the file " + e.getMessage());
      }
    }
    try {
      KeyStore store = KeyStore.getInstance("PKCS12");
      store.load(null, null);
      char[] password = new char[0];
      store.setKeyEntry("server", key, password, chain.toArray(X509Certificate[]::new));
      KeyManagerFactory keys =
          KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      keys.init(store, password);
      TrustManagerFactory trust = null;
      if (!clientCas.isEmpty()) {
        KeyStore trusted = KeyStore.getInstance("PKCS12");
        trusted.load(null, null);
        for (int i = 0; i < clientCas.size(); i++) {
          trusted.setCertificateEntry("client-ca-" + i, clientCas.get(i));
        }
        trust = TrustManagerFactory.getInstance("PKIX");
        trust.init(trusted);
      }
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(
          keys.getKeyManagers(),
          trust == null ? null : trust.getTrustManagers(),
          new SecureRandom());
      return new Identity(context, leaf, List.copyOf(stamps));
    } catch (GeneralSecurityException | IOException e) {
      throw new LaunchException(
          "--tls-cert "
              + certFile
              + " and --tls-key "
              + keyFile
              + clientCaFile.map(f -> " and " + CLIENT_CA_FLAG + " " + f).orElse("")
              + ": the JDK cannot serve TLS with them ("
              + e
              + "); want an RSA, EC or EdDSA certificate and its key"
              + clientCaFile.map(f -> ", and X.509 CA certificates").orElse(""));
    }
  }

  /** After the serving certificate come its issuers, each issuing the one before. */
  private static void checkChain(List<X509Certificate> chain, Path certFile) {
    for (int i = 1; i < chain.size(); i++) {
      X509Certificate issued = chain.get(i - 1);
      X509Certificate issuer = chain.get(i);
      if (!issued.getIssuerX500Principal().equals(issuer.getSubjectX500Principal())) {
        throw new LaunchException(
            "--tls-cert "
                + certFile
                + ": certificate "
                + (i + 1)
                + " ("
                + issuer.getSubjectX500Principal().getName()
                + ") did not issue certificate "
                + i
                + " ("
                + issued.getSubjectX500Principal().getName()
                + ", issued by "
                + issued.getIssuerX500Principal().getName()
                + "); want the serving certificate first, then each issuer in turn");
      }
    }
  }

  /** The key belongs to the certificate when a signature it makes verifies with the cert's key. */
  private static void checkPair(X509Certificate leaf, PrivateKey key, Path certFile, Path keyFile) {
    String algorithm =
        switch (key.getAlgorithm()) {
          case "RSA" -> "SHA256withRSA";
          case "EC" -> "SHA256withECDSA";
          case "EdDSA", "Ed25519", "Ed448" -> "EdDSA";
          default -> null;
        };
    boolean matches;
    if (algorithm == null) {
      matches = false;
    } else {
      try {
        byte[] probe = "gpushare TLS key check".getBytes(StandardCharsets.UTF_8);
        Signature signer = Signature.getInstance(algorithm);
        signer.initSign(key);
        signer.update(probe);
        byte[] signature = signer.sign();
        Signature verifier = Signature.getInstance(algorithm);
        verifier.initVerify(leaf.getPublicKey());
        verifier.update(probe);
        matches = verifier.verify(signature);
      } catch (GeneralSecurityException e) {
        matches = false;
      }
    }
    if (!matches) {
      throw new LaunchException(
          "--tls-key "
              + keyFile
              + ": the "
              + key.getAlgorithm()
              + " private key does not belong to the certificate of --tls-cert "
              + certFile
              + " ("
              + leaf.getSubjectX500Principal().getName()
              + ", "
              + leaf.getPublicKey().getAlgorithm()
              + " public key); want the key the certificate was issued for (tls.key beside"
              + " tls.crt in the same Secret)");
    }
  }

  private static void warnIfOutOfValidity(String listener, X509Certificate leaf, Path certFile) {
    Instant now = Instant.now();
    Instant from = leaf.getNotBefore().toInstant();
    Instant until = leaf.getNotAfter().toInstant();
    if (now.isBefore(from) || now.isAfter(until)) {
      LOG.warn(
          "the {} certificate {} ({}) is valid from {} until {}, not now ({}): clients will"
              + " refuse it until it is renewed",
          listener,
          certFile,
          leaf.getSubjectX500Principal().getName(),
          from,
          until,
          now);
    }
  }

  private static Stamp checkedStamp(String flag, Path file, String what) {
    if (!Files.exists(file)) {
      throw new LaunchException(
          flag + " " + file + ": no such file; want the PEM file of " + what + accepted(flag));
    }
    if (!Files.isRegularFile(file)) {
      throw new LaunchException(
          flag
              + " "
              + file
              + ": not a regular file; want the PEM file of "
              + what
              + accepted(flag));
    }
    try {
      return stamp(file);
    } catch (IOException e) {
      throw new LaunchException(flag + " " + file + ": cannot be read (" + e + ")");
    }
  }

  private static String read(String flag, Path file) {
    try {
      // PEM is ASCII; anything else (DER, say) reads as text without PEM blocks.
      return new String(Files.readAllBytes(file), StandardCharsets.ISO_8859_1);
    } catch (NoSuchFileException e) {
      throw new LaunchException(flag + " " + file + ": no such file" + accepted(flag));
    } catch (IOException e) {
      throw new LaunchException(
          flag + " " + file + ": cannot be read (" + e + "); want a readable PEM file");
    }
  }

  private static String accepted(String flag) {
    return switch (flag) {
      case "--tls-cert" ->
          " (tls.crt of a kubernetes.io/tls Secret: BEGIN CERTIFICATE blocks, the"
              + " serving certificate first)";
      case CLIENT_CA_FLAG ->
          " (the CA certificate(s) that issue the scheduler's client"
              + " certificate: BEGIN CERTIFICATE blocks)";
      default -> " (tls.key of a kubernetes.io/tls Secret: " + Pem.ACCEPTED_KEYS + ")";
    };
  }

  private static Stamp stamp(Path file) throws IOException {
    return new Stamp(Files.getLastModifiedTime(file).toInstant(), Files.size(file));
  }

  @Override
  public String toString() {
    return "ServerTls["
        + listener
        + ", "
        + Objects.toString(certFile)
        + ", "
        + keyFile
        + clientCaFile.map(f -> ", client CA " + f).orElse("")
        + "]";
  }
}
