package dev.gpushare.http.tls;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.security.KeyFactory;
import java.security.NoSuchAlgorithmException;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * PEM files as {@code kubernetes.io/tls} Secrets hold them, read with the JDK alone: certificates
 * ({@code BEGIN CERTIFICATE}, leaf first) and one unencrypted private key, PKCS#8 ({@code BEGIN
 * PRIVATE KEY}: RSA, EC or EdDSA), PKCS#1 ({@code BEGIN RSA PRIVATE KEY}) or SEC1 ({@code BEGIN EC
 * PRIVATE KEY}); the last two are rewrapped as PKCS#8 by a few bytes of DER. Text outside the
 * blocks (openssl's {@code Bag Attributes}, an {@code EC PARAMETERS} block) is ignored. Failures
 * are {@link IllegalArgumentException}s whose message says what the text holds and what is
 * accepted; the caller names the file.
 */
final class Pem {
  private Pem() {}

  private static final Pattern BLOCK =
      Pattern.compile("-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \\1-----", Pattern.DOTALL);

  static final String ACCEPTED_KEYS =
      "an unencrypted PEM private key: PKCS#8 (BEGIN PRIVATE KEY), PKCS#1 RSA (BEGIN RSA PRIVATE"
          + " KEY) or SEC1 EC (BEGIN EC PRIVATE KEY)";

  /** rsaEncryption, 1.2.840.113549.1.1.1, with its NULL parameters. */
  private static final byte[] RSA_ALGORITHM = {
    0x30,
    0x0d,
    0x06,
    0x09,
    0x2a,
    (byte) 0x86,
    0x48,
    (byte) 0x86,
    (byte) 0xf7,
    0x0d,
    0x01,
    0x01,
    0x01,
    0x05,
    0x00
  };

  /** id-ecPublicKey, 1.2.840.10045.2.1. */
  private static final byte[] EC_PUBLIC_KEY_OID = {
    0x06, 0x07, 0x2a, (byte) 0x86, 0x48, (byte) 0xce, 0x3d, 0x02, 0x01
  };

  /** PKCS#8 version 0. */
  private static final byte[] VERSION_0 = {0x02, 0x01, 0x00};

  private record Block(String type, byte[] der) {}

  /** The certificates of the text, in order; at least one. */
  static List<X509Certificate> certificates(String text) {
    List<X509Certificate> chain = new ArrayList<>();
    List<String> others = new ArrayList<>();
    for (Block block : blocks(text)) {
      if (!block.type().equals("CERTIFICATE")) {
        others.add(block.type());
        continue;
      }
      try {
        chain.add(
            (X509Certificate)
                CertificateFactory.getInstance("X.509")
                    .generateCertificate(new ByteArrayInputStream(block.der())));
      } catch (CertificateException e) {
        throw new IllegalArgumentException(
            "holds a CERTIFICATE block (number "
                + (chain.size() + 1)
                + ") that is not a valid X.509 certificate ("
                + e.getMessage()
                + "); want PEM certificates (BEGIN CERTIFICATE), the serving certificate first");
      }
    }
    if (chain.isEmpty()) {
      throw new IllegalArgumentException(
          (others.isEmpty() ? "holds no PEM block" : "holds only " + String.join(", ", others))
              + "; want PEM certificates (BEGIN CERTIFICATE), the serving certificate first");
    }
    return List.copyOf(chain);
  }

  /**
   * The one private key of the text; {@code algorithm} (the certificate's key algorithm) is tried
   * first.
   */
  static PrivateKey privateKey(String text, String algorithm) {
    List<Block> keys = new ArrayList<>();
    List<String> others = new ArrayList<>();
    for (Block block : blocks(text)) {
      if (block.type().endsWith("PRIVATE KEY")) {
        keys.add(block);
      } else if (!block.type().equals("EC PARAMETERS")) {
        others.add(block.type());
      }
    }
    if (keys.isEmpty()) {
      throw new IllegalArgumentException(
          (others.isEmpty() ? "holds no PEM block" : "holds only " + String.join(", ", others))
              + "; want "
              + ACCEPTED_KEYS);
    }
    if (keys.size() > 1) {
      throw new IllegalArgumentException(
          "holds " + keys.size() + " private keys; want exactly one, " + ACCEPTED_KEYS);
    }
    Block key = keys.get(0);
    return switch (key.type()) {
      case "PRIVATE KEY" -> pkcs8(key.der(), algorithm);
      case "RSA PRIVATE KEY" ->
          pkcs8(der(0x30, VERSION_0, RSA_ALGORITHM, der(0x04, key.der())), "RSA");
      case "EC PRIVATE KEY" -> pkcs8(sec1AsPkcs8(key.der()), "EC");
      case "ENCRYPTED PRIVATE KEY" ->
          throw new IllegalArgumentException(
              "holds an encrypted key (BEGIN ENCRYPTED PRIVATE KEY); want "
                  + ACCEPTED_KEYS
                  + ": cert-manager and kubectl create secret tls write unencrypted keys, or"
                  + " decrypt with openssl pkcs8 -in KEY -nocrypt");
      default ->
          throw new IllegalArgumentException(
              "holds a key of type " + key.type() + "; want " + ACCEPTED_KEYS);
    };
  }

  private static PrivateKey pkcs8(byte[] der, String algorithm) {
    Set<String> algorithms = new LinkedHashSet<>();
    algorithms.add(algorithm);
    algorithms.addAll(List.of("RSA", "EC", "EdDSA"));
    for (String a : algorithms) {
      try {
        return KeyFactory.getInstance(a).generatePrivate(new PKCS8EncodedKeySpec(der));
      } catch (NoSuchAlgorithmException | InvalidKeySpecException e) {
        // try the next algorithm
      }
    }
    throw new IllegalArgumentException(
        "holds a private key that is neither RSA, EC nor EdDSA, or is damaged; want "
            + ACCEPTED_KEYS);
  }

  /**
   * A SEC1 {@code ECPrivateKey} inside a PKCS#8 envelope whose algorithm names the curve that the
   * SEC1 structure carries in its {@code [0] parameters}.
   */
  private static byte[] sec1AsPkcs8(byte[] sec1) {
    try {
      int[] outer = header(sec1, 0);
      int at = outer[1];
      int end = at + outer[2];
      while (at < end) {
        int[] element = header(sec1, at);
        if (element[0] == 0xa0) {
          byte[] curve = new byte[element[2]];
          System.arraycopy(sec1, element[1], curve, 0, element[2]);
          return der(0x30, VERSION_0, der(0x30, EC_PUBLIC_KEY_OID, curve), der(0x04, sec1));
        }
        at = element[1] + element[2];
      }
    } catch (ArrayIndexOutOfBoundsException e) {
      throw new IllegalArgumentException(
          "holds a damaged EC PRIVATE KEY (its DER is cut short); want " + ACCEPTED_KEYS);
    }
    throw new IllegalArgumentException(
        "holds an EC PRIVATE KEY that does not name its curve; want a PKCS#8 key (openssl pkcs8"
            + " -topk8 -nocrypt -in KEY) or a SEC1 key with its parameters");
  }

  /** A DER element's tag, the offset of its contents and their length. */
  private static int[] header(byte[] der, int at) {
    int tag = der[at] & 0xff;
    int first = der[at + 1] & 0xff;
    if (first < 0x80) {
      return new int[] {tag, at + 2, first};
    }
    int bytes = first & 0x7f;
    if (bytes > 3) {
      throw new ArrayIndexOutOfBoundsException("DER length of " + bytes + " bytes");
    }
    int length = 0;
    for (int i = 0; i < bytes; i++) {
      length = (length << 8) | (der[at + 2 + i] & 0xff);
    }
    return new int[] {tag, at + 2 + bytes, length};
  }

  /** One DER element of {@code tag} whose contents are the given encodings, concatenated. */
  private static byte[] der(int tag, byte[]... contents) {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    for (byte[] c : contents) {
      body.writeBytes(c);
    }
    int length = body.size();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(tag);
    if (length < 0x80) {
      out.write(length);
    } else if (length < 0x100) {
      out.write(0x81);
      out.write(length);
    } else if (length < 0x10000) {
      out.write(0x82);
      out.write(length >> 8);
      out.write(length);
    } else {
      out.write(0x83);
      out.write(length >> 16);
      out.write(length >> 8);
      out.write(length);
    }
    out.writeBytes(body.toByteArray());
    return out.toByteArray();
  }

  private static List<Block> blocks(String text) {
    List<Block> blocks = new ArrayList<>();
    Matcher m = BLOCK.matcher(text);
    while (m.find()) {
      String body = m.group(2);
      if (body.contains("Proc-Type:") && body.contains("ENCRYPTED")) {
        throw new IllegalArgumentException(
            "holds an encrypted "
                + m.group(1)
                + " (Proc-Type: 4,ENCRYPTED); want "
                + ACCEPTED_KEYS
                + ", decrypted with openssl pkey -in KEY");
      }
      try {
        blocks.add(new Block(m.group(1), Base64.getMimeDecoder().decode(body.strip())));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "has a " + m.group(1) + " block that is not valid base64: " + e.getMessage());
      }
    }
    return blocks;
  }
}
