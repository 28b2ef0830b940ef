/*
 * Everything the library reads from the environment, parsed once at load time, with the names and
 * defaults of `gpushare run`: GPUSHARE_SERVER; GPUSHARE_POD (NS/NAME), else POD_NAMESPACE and
 * POD_NAME; plus GPUSHARE_TOKEN_FILE, GPUSHARE_WAIT_INTERVAL, GPUSHARE_GRACE, GPUSHARE_ON_ERROR,
 * GPUSHARE_STATE_DIR and GPUSHARE_DEBUG.
 *
 * Without GPUSHARE_SERVER the library is inert: the process is not in a sharing pod (the webhook
 * sets it only there), and every call passes straight through. A malformed setting is not guessed
 * around: gs_cfg.error holds the line to print, and the process's CUDA calls fail with
 * CUDA_ERROR_NO_DEVICE, since it can neither be governed nor wait for something that will change.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpushare.h"

struct gs_config gs_cfg;

long gs_parse_duration_ms(const char *text) {
  if (text == NULL || *text == '\0') return -1;
  const char *p = text;
  long n = 0;
  int digits = 0;
  while (*p >= '0' && *p <= '9') {
    if (++digits > 9) return -1;
    n = n * 10 + (*p++ - '0');
  }
  if (digits == 0) return -1;
  if (*p == '\0' || strcmp(p, "s") == 0) return n * 1000;
  if (strcmp(p, "ms") == 0) return n;
  if (strcmp(p, "m") == 0) return n * 60 * 1000;
  if (strcmp(p, "h") == 0) return n * 3600 * 1000;
  return -1;
}

static void refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void refuse(const char *fmt, ...) {
  if (gs_cfg.error[0]) return; /* the first problem is the one to fix first */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(gs_cfg.error, sizeof gs_cfg.error, fmt, ap);
  va_end(ap);
}

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

/* A Kubernetes name: DNS-1123 (lower-case alphanumerics, '-' and '.'), 1..253. */
static int valid_name(const char *s, size_t max) {
  size_t n = strlen(s);
  if (n == 0 || n > max) return 0;
  for (const char *p = s; *p; p++) {
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.')) return 0;
  }
  return 1;
}

/* Whether a host of GPUSHARE_SERVER names this machine: 127.0.0.0/8, ::1 or localhost. */
static int loopback(const char *host) {
  return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
         strcmp(host, "localhost") == 0;
}

static void parse_server(const char *server) {
  snprintf(gs_cfg.server, sizeof gs_cfg.server, "%s", server);
  if (strncmp(server, "unix:", 5) == 0) {
    const char *path = server + 5;
    if (*path != '/' || strlen(path) >= sizeof gs_cfg.unix_path) {
      refuse("GPUSHARE_SERVER='%s' is not usable: give unix:/absolute/path (under %zu bytes) or "
             "http://HOST:PORT", server, sizeof gs_cfg.unix_path);
      return;
    }
    snprintf(gs_cfg.unix_path, sizeof gs_cfg.unix_path, "%s", path);
    return;
  }
  if (strncmp(server, "http://", 7) != 0) {
    refuse("GPUSHARE_SERVER='%s' is not usable: give http://HOST:PORT (the node's data plane) or "
           "unix:/path", server);
    return;
  }
  const char *host = server + 7;
  const char *end = host + strcspn(host, "/");
  if (*end == '/' && end[1] != '\0') {
    refuse("GPUSHARE_SERVER='%s' is not usable: give http://HOST:PORT without a path", server);
    return;
  }
  const char *colon = NULL;
  const char *h0 = host, *h1;
  if (*host == '[') { /* [::1]:8080 */
    const char *close = memchr(host, ']', (size_t)(end - host));
    if (close == NULL) {
      refuse("GPUSHARE_SERVER='%s' is not usable: an IPv6 address needs its closing ']'", server);
      return;
    }
    h0 = host + 1;
    h1 = close;
    colon = close[1] == ':' ? close + 1 : NULL;
  } else {
    colon = memchr(host, ':', (size_t)(end - host));
    h1 = colon ? colon : end;
  }
  size_t hn = (size_t)(h1 - h0);
  if (hn == 0 || hn >= sizeof gs_cfg.host) {
    refuse("GPUSHARE_SERVER='%s' is not usable: no host; give http://HOST:PORT", server);
    return;
  }
  memcpy(gs_cfg.host, h0, hn);
  gs_cfg.host[hn] = '\0';
  if (colon) {
    size_t pn = (size_t)(end - colon - 1);
    char port[16] = "";
    if (pn > 0 && pn < sizeof port) memcpy(port, colon + 1, pn), port[pn] = '\0';
    char *stop;
    long p = strtol(port, &stop, 10);
    if (pn == 0 || pn >= sizeof port || *stop != '\0' || p < 1 || p > 65535) {
      refuse("GPUSHARE_SERVER='%s' is not usable: the port must be 1..65535", server);
      return;
    }
    snprintf(gs_cfg.port, sizeof gs_cfg.port, "%ld", p);
  } else {
    snprintf(gs_cfg.port, sizeof gs_cfg.port, "80");
  }
}

static void parse_pod(void) {
  const char *pod = env("GPUSHARE_POD");
  if (pod) {
    const char *slash = strchr(pod, '/');
    size_t nsl = slash ? (size_t)(slash - pod) : 0;
    if (!slash || nsl == 0 || nsl >= sizeof gs_cfg.ns || strchr(slash + 1, '/')) {
      refuse("GPUSHARE_POD='%s' is not NAMESPACE/NAME: set it to this pod, e.g. default/notebook",
             pod);
      return;
    }
    memcpy(gs_cfg.ns, pod, nsl);
    gs_cfg.ns[nsl] = '\0';
    snprintf(gs_cfg.name, sizeof gs_cfg.name, "%s", slash + 1);
  } else {
    const char *ns = env("POD_NAMESPACE"), *name = env("POD_NAME");
    if (!ns || !name) {
      refuse("no pod: set GPUSHARE_POD=NAMESPACE/NAME, or POD_NAMESPACE and POD_NAME (the "
             "downward API), for the pod this process runs in");
      return;
    }
    snprintf(gs_cfg.ns, sizeof gs_cfg.ns, "%s", ns);
    snprintf(gs_cfg.name, sizeof gs_cfg.name, "%s", name);
  }
  if (!valid_name(gs_cfg.ns, 63) || !valid_name(gs_cfg.name, 253)) {
    refuse("pod '%s/%s' is not a Kubernetes namespace and name (lower-case letters, digits, '-' "
           "and '.'): check GPUSHARE_POD, or POD_NAMESPACE and POD_NAME", gs_cfg.ns, gs_cfg.name);
  }
}

static long duration(const char *name, long fallback_ms, long min_ms) {
  const char *v = env(name);
  if (!v) return fallback_ms;
  long ms = gs_parse_duration_ms(v);
  if (ms < 0) {
    refuse("%s='%s' is not a duration: give a number with a unit: 500ms, 10s, 2m, 1h", name, v);
    return fallback_ms;
  }
  if (ms < min_ms) {
    refuse("%s='%s' is too short: give %ldms or more", name, v, min_ms);
    return fallback_ms;
  }
  return ms;
}

void gs_config_load(void) {
  memset(&gs_cfg, 0, sizeof gs_cfg);
  gs_cfg.wait_interval_ms = 10000;
  gs_cfg.grace_ms = 30000;
  gs_cfg.debug = env("GPUSHARE_DEBUG") && strcmp(env("GPUSHARE_DEBUG"), "0") != 0;
  const char *server = env("GPUSHARE_SERVER");
  if (!server) return; /* not a sharing pod: inert */
  gs_cfg.active = 1;
  parse_server(server);
  parse_pod();
  const char *token = env("GPUSHARE_TOKEN_FILE");
  if (token) {
    if (strlen(token) >= sizeof gs_cfg.token_file || token[0] != '/') {
      refuse("GPUSHARE_TOKEN_FILE='%s' is not usable: give the absolute path of the file holding "
             "the bearer token", token);
    } else {
      snprintf(gs_cfg.token_file, sizeof gs_cfg.token_file, "%s", token);
    }
  }
  if (gs_cfg.token_file[0] && !gs_cfg.unix_path[0] && gs_cfg.host[0] && !loopback(gs_cfg.host)) {
    /* The data plane speaks plain HTTP: a token sent to another machine crosses the network in
     * clear text. The node's Unix socket (which the webhook sets) never leaves the node. */
    refuse("GPUSHARE_SERVER='%s' with GPUSHARE_TOKEN_FILE would send the pod's token over the "
           "network in clear text: give unix:/path (the node's data-plane socket, as the webhook "
           "sets it) or a loopback address (127.0.0.1, [::1], localhost)", gs_cfg.server);
  }
  gs_cfg.wait_interval_ms = duration("GPUSHARE_WAIT_INTERVAL", 10000, 1000);
  gs_cfg.grace_ms = duration("GPUSHARE_GRACE", 30000, 0);
  const char *on_error = env("GPUSHARE_ON_ERROR");
  if (on_error && strcmp(on_error, "fail") == 0) {
    gs_cfg.on_error = GS_ON_ERROR_FAIL;
  } else if (on_error && strcmp(on_error, "wait") != 0) {
    refuse("GPUSHARE_ON_ERROR='%s' is not one of: wait (the default: CUDA calls wait and retry), "
           "fail (they fail with CUDA_ERROR_NO_DEVICE)", on_error);
  }
  const char *dir = env("GPUSHARE_STATE_DIR");
  if (dir) {
    if (dir[0] != '/' || strlen(dir) >= sizeof gs_cfg.state_dir - 64) {
      refuse("GPUSHARE_STATE_DIR='%s' is not usable: give an absolute directory path", dir);
    } else {
      snprintf(gs_cfg.state_dir, sizeof gs_cfg.state_dir, "%s", dir);
    }
  } else {
    snprintf(gs_cfg.state_dir, sizeof gs_cfg.state_dir, "%s",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
  }
}

/* One write(2) per line, so that lines of several threads and processes never interleave, and
 * so that a signal handler may say something too (vsnprintf into a stack buffer is not formally
 * async-signal-safe; the handlers only pass plain %s and %d). */
static void emit(const char *prefix, const char *fmt, va_list ap) {
  char line[1024];
  int n = snprintf(line, sizeof line, "%s", prefix);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m < sizeof line - (size_t)n - 1 ? (size_t)m
                                                        : sizeof line - (size_t)n - 2);
  line[len++] = '\n';
  int saved = errno;
  for (size_t off = 0; off < len;) {
    ssize_t w = write(STDERR_FILENO, line + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    off += (size_t)w;
  }
  errno = saved;
}

void gs_say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit("gpushare: ", fmt, ap);
  va_end(ap);
}

void gs_say_raw(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit("", fmt, ap);
  va_end(ap);
}

void gs_debug(const char *fmt, ...) {
  if (!gs_cfg.debug) return;
  va_list ap;
  va_start(ap, fmt);
  emit("gpushare: debug: ", fmt, ap);
  va_end(ap);
}
