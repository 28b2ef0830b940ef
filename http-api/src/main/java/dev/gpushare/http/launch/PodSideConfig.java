package dev.gpushare.http.launch;

import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigValue;
import dev.gpushare.arbiter.KubernetesNames;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;

/**
 * The pod side {@code gpushare.pod-side} of {@link EmbeddedConfig} ({@link PodSideSettings}): where
 * the member serves the data plane on a Unix socket, and what the mutating webhook adds to a
 * sharing pod; checked with the same rules and messages (key, where it was set, the value given,
 * what is accepted):
 *
 * <pre>
 * gpushare.pod-side {
 *   socket = off                      # off | the absolute path of the data-plane Unix socket
 *   inject = on                       # on | off: the webhook completes share-pool/static pods
 *   image = "gpushare:0.1.0"          # the init container's image (the product's own)
 *   image-pull-policy = IfNotPresent  # Always | IfNotPresent | Never
 *   library-dir = "/opt/gpushare/lib" # absolute; where the library is mounted in the pod
 *   token-audience = gpushare         # the projected token's audience, required by the member
 *   token-expiration = 10m            # 10m .. 48h
 *   runtime-class = none              # none | a DNS-1123 subdomain
 *   mps-uid = 1000                    # 1 .. 2147483647: the UID of every MPS workload
 * }
 * </pre>
 *
 * Every key is optional; an absent key takes its default ({@link PodSideSettings#DEFAULT}). The
 * settings' {@code mpsRoot} is {@code gpushare.gpu.mps-root} ({@link GpuConfig}), read before.
 */
final class PodSideConfig {

  static final String AT = "gpushare.pod-side";

  static final Set<String> KEYS =
      Set.of(
          "socket",
          "inject",
          "image",
          "image-pull-policy",
          "library-dir",
          "token-audience",
          "token-expiration",
          "runtime-class",
          "mps-uid");

  /**
   * The longest socket path, in bytes: a Unix socket address holds at most 107 (108 with the
   * terminating NUL) on Linux, and a little room is left for the systems that hold fewer.
   */
  static final int MAX_SOCKET_BYTES = 99;

  static final Duration MIN_TOKEN_EXPIRATION = Duration.ofMinutes(10);
  static final Duration MAX_TOKEN_EXPIRATION = Duration.ofHours(48);

  private static final String SOCKET =
      "off (no data-plane socket; the webhook cannot inject) or the absolute path of the"
          + " data-plane Unix socket, such as \""
          + PodSideSettings.DEPLOY_SOCKET
          + "\": shorter than 100 bytes, normalized (no '.', '..', '//' or trailing '/'), in a"
          + " directory other than '/' (that directory is mounted into every sharing pod), without"
          + " ':' or spaces";
  private static final String INJECT =
      "on (the mutating webhook completes share-pool and static pods with the library, its token"
          + " and the socket) or off";
  private static final String IMAGE =
      "a container image reference without spaces, such as \""
          + PodSideSettings.DEFAULT_IMAGE
          + "\" or \"registry.example/gpushare@sha256:…\" (the product's own image, which holds the"
          + " library)";
  private static final String PULL_POLICY = "Always, IfNotPresent or Never";
  private static final String LIBRARY_DIR =
      "an absolute, normalized directory path other than '/' without ':' or spaces (it goes into"
          + " LD_PRELOAD), such as \""
          + PodSideSettings.DEFAULT_LIBRARY_DIR
          + "\"";
  private static final String AUDIENCE =
      "a non-empty audience without spaces, such as \""
          + PodSideSettings.DEFAULT_AUDIENCE
          + "\" (the projected token's audience, which the member's TokenReview requires)";
  private static final String EXPIRATION =
      "a duration of whole seconds from 10m to 48h, such as 10m (the projected token's"
          + " expirationSeconds; the kubelet renews it at 80% of its life)";
  private static final String RUNTIME_CLASS =
      "none (pods keep their runtime class) or the RuntimeClass given to pods that name none, "
          + KubernetesNames.DNS1123_SUBDOMAIN_ACCEPTED;
  private static final String MPS_UID =
      "a UID from 1 to 2147483647, such as 1000 (every MPS workload of a node runs as this one"
          + " user)";

  private PodSideConfig() {}

  /**
   * {@code gpushare.pod-side} of the {@code gpushare} section; {@code mpsRoot} is the checked
   * {@code gpushare.gpu.mps-root}. {@code null} after an error.
   */
  static PodSideSettings read(ConfigObject section, ConfigErrors errors, Optional<String> mpsRoot) {
    PodSideSettings d = PodSideSettings.DEFAULT.withMpsRoot(mpsRoot);
    ConfigObject side = errors.object(section, "pod-side", "gpushare", false);
    if (side == null) {
      return section.get("pod-side") == null ? d : null;
    }
    errors.unknownKeys(side, AT, KEYS);
    Optional<String> socket =
        optional(side, "socket", "off", d.socket(), SOCKET, PodSideConfig::socket, errors);
    Boolean inject =
        side.get("inject") == null
            ? Boolean.valueOf(d.inject())
            : errors.scalar(side, "inject", AT, INJECT, GpuConfig::onOff);
    String image =
        side.get("image") == null
            ? d.image()
            : errors.scalar(side, "image", AT, IMAGE, PodSideConfig::image);
    String pullPolicy =
        side.get("image-pull-policy") == null
            ? d.imagePullPolicy()
            : errors.scalar(
                side,
                "image-pull-policy",
                AT,
                PULL_POLICY,
                v ->
                    Set.of("Always", "IfNotPresent", "Never").contains(v)
                        ? Optional.of(v)
                        : Optional.empty());
    String libraryDir =
        side.get("library-dir") == null
            ? d.libraryDir()
            : errors.scalar(side, "library-dir", AT, LIBRARY_DIR, PodSideConfig::libraryDir);
    String audience =
        side.get("token-audience") == null
            ? d.tokenAudience()
            : errors.scalar(
                side,
                "token-audience",
                AT,
                AUDIENCE,
                v ->
                    !v.isEmpty() && v.codePoints().noneMatch(PodSideConfig::spaceOrControl)
                        ? Optional.of(v)
                        : Optional.empty());
    Duration expiration =
        side.get("token-expiration") == null ? d.tokenExpiration() : expiration(side, errors);
    Optional<String> runtimeClass =
        optional(
            side,
            "runtime-class",
            "none",
            d.runtimeClass(),
            RUNTIME_CLASS,
            v -> KubernetesNames.isDns1123Subdomain(v) ? Optional.of(v) : Optional.empty(),
            errors);
    Long mpsUid =
        side.get("mps-uid") == null
            ? Long.valueOf(d.mpsUid())
            : errors.scalar(
                side,
                "mps-uid",
                AT,
                MPS_UID,
                v -> {
                  try {
                    long uid = Long.parseLong(v);
                    return uid >= 1 && uid <= Integer.MAX_VALUE
                        ? Optional.of(uid)
                        : Optional.empty();
                  } catch (NumberFormatException e) {
                    return Optional.empty();
                  }
                });
    if (socket == null
        || inject == null
        || image == null
        || pullPolicy == null
        || libraryDir == null
        || audience == null
        || expiration == null
        || runtimeClass == null
        || mpsUid == null) {
      return null;
    }
    return new PodSideSettings(
        socket,
        inject.booleanValue(),
        image,
        pullPolicy,
        libraryDir,
        audience,
        expiration,
        runtimeClass,
        mpsRoot,
        mpsUid.longValue());
  }

  /**
   * A key that is either {@code none} (any case; for {@code off} also {@code false}) or a value
   * {@code read} accepts; its default when absent; {@code null} after an error.
   */
  private static Optional<String> optional(
      ConfigObject side,
      String key,
      String none,
      Optional<String> dflt,
      String rule,
      java.util.function.Function<String, Optional<String>> read,
      ConfigErrors errors) {
    if (side.get(key) == null) {
      return dflt;
    }
    Optional<Optional<String>> value =
        Optional.ofNullable(
            errors.scalar(
                side,
                key,
                AT,
                rule,
                v ->
                    v.equalsIgnoreCase(none) || none.equals("off") && v.equals("false")
                        ? Optional.of(Optional.<String>empty())
                        : read.apply(v).map(Optional::of)));
    return value.orElse(null);
  }

  private static Optional<String> socket(String value) {
    if (value.getBytes(StandardCharsets.UTF_8).length > MAX_SOCKET_BYTES
        || value.indexOf(':') >= 0) {
      return Optional.empty();
    }
    return normalizedAbsolute(value).filter(path -> !inRoot(path));
  }

  private static Optional<String> libraryDir(String value) {
    return value.indexOf(':') >= 0 ? Optional.empty() : normalizedAbsolute(value);
  }

  /** An absolute path as Path would write it, not the root, without spaces or controls. */
  private static Optional<String> normalizedAbsolute(String value) {
    if (!value.startsWith("/")
        || value.equals("/")
        || value.codePoints().anyMatch(PodSideConfig::spaceOrControl)) {
      return Optional.empty();
    }
    try {
      Path path = Path.of(value);
      if (!path.normalize().toString().equals(value) || path.getParent() == null) {
        return Optional.empty();
      }
      return Optional.of(value);
    } catch (InvalidPathException e) {
      return Optional.empty();
    }
  }

  /** A socket must not sit in "/" itself: its directory is mounted into every sharing pod. */
  private static boolean inRoot(String socket) {
    return Path.of(socket).getParent().getParent() == null;
  }

  private static Optional<String> image(String value) {
    if (value.isEmpty()
        || value.startsWith("-")
        || value.startsWith(":")
        || value.startsWith("/")
        || value.endsWith(":")
        || value.endsWith("/")
        || value.codePoints().anyMatch(PodSideConfig::spaceOrControl)) {
      return Optional.empty();
    }
    return Optional.of(value);
  }

  private static boolean spaceOrControl(int c) {
    return Character.isWhitespace(c) || Character.isSpaceChar(c) || Character.isISOControl(c);
  }

  private static Duration expiration(ConfigObject side, ConfigErrors errors) {
    ConfigValue value = side.get("token-expiration");
    try {
      Duration d = side.toConfig().getDuration("token-expiration");
      if (d.getNano() == 0
          && d.compareTo(MIN_TOKEN_EXPIRATION) >= 0
          && d.compareTo(MAX_TOKEN_EXPIRATION) <= 0) {
        return d;
      }
    } catch (ConfigException e) {
      // reported below, with the accepted form
    }
    errors.add(AT + ".token-expiration", value, "expected " + EXPIRATION);
    return null;
  }
}
