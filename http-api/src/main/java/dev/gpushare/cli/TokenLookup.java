package dev.gpushare.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Where the bearer token comes from, first found wins:
 *
 * <ol>
 *   <li>{@code --token TOKEN}, or {@code --token-file FILE} (not both);
 *   <li>{@code $GPUSHARE_TOKEN}, else {@code $GPUSHARE_TOKEN_FILE} (an empty variable counts as
 *       unset);
 *   <li>{@code ./data/admin-token}, the admin token an embedded server writes into its data
 *       directory on first start, when it exists and can be read;
 *   <li>the pod's ServiceAccount token {@code /var/run/secrets/kubernetes.io/serviceaccount/token},
 *       when it exists and can be read.
 * </ol>
 *
 * A file named explicitly (flag or variable) must be readable and not empty, or the command stops
 * with a usage error; the two implicit files are only tried. Without any token no {@code
 * Authorization} header is sent ({@code /healthz} and {@code /readyz} need none).
 *
 * <p>A token read from a file under {@code /var/run/secrets/} (or {@code /run/secrets/}), where
 * Kubernetes mounts a pod's credentials (the projected token of audience {@code gpushare}, the
 * ServiceAccount token), and the ServiceAccount token found by itself are a <em>pod credential</em>
 * ({@link Credentials#podCredential()}): the CLI never sends one over plain {@code http://} to a
 * host that is not loopback.
 */
final class TokenLookup {

  static final String TOKEN_ENV = "GPUSHARE_TOKEN";
  static final String TOKEN_FILE_ENV = "GPUSHARE_TOKEN_FILE";
  static final Path ADMIN_TOKEN = Path.of("data", "admin-token");
  static final Path SERVICE_ACCOUNT_TOKEN =
      Path.of("/var/run/secrets/kubernetes.io/serviceaccount/token");

  /** Where Kubernetes mounts a pod's credentials ({@code /var/run} is {@code /run}). */
  static final List<Path> POD_SECRETS =
      List.of(Path.of("/var/run/secrets"), Path.of("/run/secrets"));

  /**
   * A token and where it was found, or none and where it was looked for. A token read from a file
   * is read again for every request ({@link #current()}): a ServiceAccount token is rotated by the
   * kubelet while a long {@code run} goes on.
   */
  record Credentials(
      Optional<String> token, String source, Optional<Path> file, boolean podCredential) {
    Credentials(Optional<String> token, String source) {
      this(token, source, Optional.empty(), false);
    }

    static Credentials none(String why) {
      return new Credentials(Optional.empty(), why);
    }

    /** The token as the file holds it now; the one found at start if it cannot be read. */
    Optional<String> current() {
      if (file.isPresent()) {
        try {
          String text = Files.readString(file.get(), StandardCharsets.UTF_8).strip();
          if (!text.isEmpty()) {
            return Optional.of(text);
          }
        } catch (IOException e) {
          // keep the one read at start
        }
      }
      return token;
    }
  }

  private TokenLookup() {}

  static Credentials find(
      String flagToken,
      Path flagTokenFile,
      Map<String, String> env,
      Path workingDir,
      Path serviceAccountToken) {
    return find(flagToken, flagTokenFile, env, workingDir, serviceAccountToken, POD_SECRETS);
  }

  /** As above, with the directories whose files are pod credentials ({@link #POD_SECRETS}). */
  static Credentials find(
      String flagToken,
      Path flagTokenFile,
      Map<String, String> env,
      Path workingDir,
      Path serviceAccountToken,
      List<Path> podSecrets) {
    if (flagToken != null && flagTokenFile != null) {
      throw new CliException("--token and --token-file: give one of them, not both");
    }
    if (flagToken != null) {
      if (flagToken.isBlank()) {
        throw new CliException("--token: empty; give the bearer token, or leave the flag out");
      }
      return new Credentials(Optional.of(flagToken.strip()), "--token");
    }
    if (flagTokenFile != null) {
      return new Credentials(
          Optional.of(readExplicit(flagTokenFile, "--token-file")),
          "--token-file " + flagTokenFile,
          Optional.of(flagTokenFile),
          isUnder(flagTokenFile, podSecrets));
    }
    String envToken = env.get(TOKEN_ENV);
    if (envToken != null && !envToken.isBlank()) {
      return new Credentials(Optional.of(envToken.strip()), "$" + TOKEN_ENV);
    }
    String envFile = env.get(TOKEN_FILE_ENV);
    if (envFile != null && !envFile.isBlank()) {
      Path file = Path.of(envFile);
      return new Credentials(
          Optional.of(readExplicit(file, "$" + TOKEN_FILE_ENV)),
          "$" + TOKEN_FILE_ENV + " (" + file + ")",
          Optional.of(file),
          isUnder(file, podSecrets));
    }
    List<String> skipped = new ArrayList<>();
    Path admin = workingDir.resolve(ADMIN_TOKEN);
    Optional<String> adminToken = readImplicit(admin, skipped);
    if (adminToken.isPresent()) {
      return new Credentials(
          adminToken, admin.toString(), Optional.of(admin), isUnder(admin, podSecrets));
    }
    Optional<String> saToken = readImplicit(serviceAccountToken, skipped);
    if (saToken.isPresent()) {
      return new Credentials(
          saToken,
          "the ServiceAccount token " + serviceAccountToken,
          Optional.of(serviceAccountToken),
          true);
    }
    return Credentials.none(
        "no token found: give --token or --token-file, set $"
            + TOKEN_ENV
            + " or $"
            + TOKEN_FILE_ENV
            + ", or run where "
            + admin
            + " or "
            + serviceAccountToken
            + " can be read"
            + (skipped.isEmpty() ? "" : " (" + String.join("; ", skipped) + ")"));
  }

  /** Whether {@code file} is in one of {@code dirs}, as written or with its links resolved. */
  static boolean isUnder(Path file, List<Path> dirs) {
    List<Path> forms = new ArrayList<>();
    Path absolute = file.toAbsolutePath().normalize();
    forms.add(absolute);
    try {
      forms.add(absolute.toRealPath());
    } catch (IOException | SecurityException e) {
      // not there (it was read, so rarely): the path as written decides
    }
    for (Path dir : dirs) {
      List<Path> dirForms = new ArrayList<>(List.of(dir.toAbsolutePath().normalize()));
      try {
        dirForms.add(dir.toRealPath());
      } catch (IOException | SecurityException e) {
        // no such directory here
      }
      for (Path f : forms) {
        for (Path d : dirForms) {
          if (f.startsWith(d) && !f.equals(d)) {
            return true;
          }
        }
      }
    }
    return false;
  }

  private static String readExplicit(Path file, String what) {
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8).strip();
    } catch (IOException e) {
      throw new CliException(
          what + " " + file + ": cannot read it (" + e.getClass().getSimpleName() + ")");
    }
    if (text.isEmpty()) {
      throw new CliException(what + " " + file + ": the file is empty; it must hold the token");
    }
    return text;
  }

  private static Optional<String> readImplicit(Path file, List<String> skipped) {
    if (!Files.exists(file)) {
      return Optional.empty();
    }
    try {
      String text = Files.readString(file, StandardCharsets.UTF_8).strip();
      if (text.isEmpty()) {
        skipped.add(file + " is empty");
        return Optional.empty();
      }
      return Optional.of(text);
    } catch (IOException e) {
      skipped.add(file + " cannot be read: " + e.getClass().getSimpleName());
      return Optional.empty();
    }
  }
}
