package dev.gpushare.http.launch;

import java.time.Duration;
import java.util.Optional;

/**
 * How the pod side reaches the pods ({@code gpushare.pod-side}, checked by the launcher's {@code
 * PodSideConfig}): where the member serves the data plane on a node-local Unix socket, and what the
 * mutating webhook adds to a share-pool or static pod so that {@code libgpushare.so} runs in it
 * (SPEC §10).
 *
 * @param socket the absolute path of the member's data-plane Unix socket, the same on the host, in
 *     the member and in the pods (its directory is mounted into them); empty: no socket (the
 *     embedded default), and the webhook cannot inject
 * @param inject whether the mutating webhook completes share-pool and static pods
 * @param image the init container's image: the product's own, which holds the library
 * @param imagePullPolicy {@code Always}, {@code IfNotPresent} or {@code Never}
 * @param libraryDir where the library's {@code emptyDir} is mounted read-only in the GPU container
 * @param tokenAudience the audience of the projected ServiceAccount token the library sends, and
 *     the one the member's TokenReview requires for a pod's own data plane
 * @param tokenExpiration the projected token's {@code expirationSeconds}
 * @param runtimeClass the {@code runtimeClassName} given to a pod that names none; empty: none
 * @param mpsRoot the node's MPS directory ({@code gpushare.gpu.mps-root}); empty: MPS is off
 * @param mpsUid the one UID every MPS workload of a node runs as
 */
public record PodSideSettings(
    Optional<String> socket,
    boolean inject,
    String image,
    String imagePullPolicy,
    String libraryDir,
    String tokenAudience,
    Duration tokenExpiration,
    Optional<String> runtimeClass,
    Optional<String> mpsRoot,
    long mpsUid) {

  /** The default socket path of {@code deploy/}. */
  public static final String DEPLOY_SOCKET = "/run/gpushare/data-plane/gpushare.sock";

  public static final String DEFAULT_IMAGE = "gpushare:0.1.0";
  public static final String DEFAULT_LIBRARY_DIR = "/opt/gpushare/lib";
  public static final String DEFAULT_AUDIENCE = "gpushare";
  public static final Duration DEFAULT_TOKEN_EXPIRATION = Duration.ofMinutes(10);
  public static final long DEFAULT_MPS_UID = 1000;

  /** The built-in settings: no socket, injection on (it needs a socket when the webhook runs). */
  public static final PodSideSettings DEFAULT =
      new PodSideSettings(
          Optional.empty(),
          true,
          DEFAULT_IMAGE,
          "IfNotPresent",
          DEFAULT_LIBRARY_DIR,
          DEFAULT_AUDIENCE,
          DEFAULT_TOKEN_EXPIRATION,
          Optional.empty(),
          Optional.empty(),
          DEFAULT_MPS_UID);

  /** The same with another socket. */
  public PodSideSettings withSocket(Optional<String> path) {
    return new PodSideSettings(
        path,
        inject,
        image,
        imagePullPolicy,
        libraryDir,
        tokenAudience,
        tokenExpiration,
        runtimeClass,
        mpsRoot,
        mpsUid);
  }

  /** The same with another MPS directory. */
  public PodSideSettings withMpsRoot(Optional<String> root) {
    return new PodSideSettings(
        socket,
        inject,
        image,
        imagePullPolicy,
        libraryDir,
        tokenAudience,
        tokenExpiration,
        runtimeClass,
        root,
        mpsUid);
  }
}
