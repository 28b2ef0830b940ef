/*
 * The data-plane client: HTTP/1.1 over TCP (http://HOST:PORT) or a Unix socket (unix:/path), one
 * connection per request ("Connection: close"), the bearer token read from GPUSHARE_TOKEN_FILE at
 * each request (projected tokens rotate). Plain sockets and poll(2): no libcurl, no OpenSSL.
 * Never on the hot path: only the slow path and the watch thread call it.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gpushare.h"

#define CONNECT_TIMEOUT_MS 5000
#define MAX_BODY (4u << 20)

static long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static int wait_fd(int fd, short events, long deadline) {
  for (;;) {
    long left = deadline - now_ms();
    if (left <= 0) return 0;
    struct pollfd p = {fd, events, 0};
    int r = poll(&p, 1, (int)(left > 60000 ? 60000 : left));
    if (r > 0) return 1;
    if (r < 0 && errno != EINTR) return -1;
  }
}

static int connect_one(int family, const struct sockaddr *addr, socklen_t len, char *err,
                       size_t errlen) {
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    snprintf(err, errlen, "socket: %s", strerror(errno));
    return -1;
  }
  if (connect(fd, addr, len) == 0) return fd;
  if (errno == EINPROGRESS) {
    int ready = wait_fd(fd, POLLOUT, now_ms() + CONNECT_TIMEOUT_MS);
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (ready > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0) return fd;
    snprintf(err, errlen, "connect: %s",
             ready == 0 ? "timed out after 5s" : strerror(soerr ? soerr : errno));
  } else {
    snprintf(err, errlen, "connect: %s", strerror(errno));
  }
  close(fd);
  return -1;
}

/* The address the last request reached, for gs_http_signal_safe (no getaddrinfo in a handler). */
static struct sockaddr_storage reached;
static socklen_t reached_len;
static _Atomic int reached_family;

static int open_connection(char *err, size_t errlen) {
  if (gs_cfg.unix_path[0]) {
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path, sizeof a.sun_path, "%s", gs_cfg.unix_path);
    return connect_one(AF_UNIX, (struct sockaddr *)&a, sizeof a, err, errlen);
  }
  struct addrinfo hints, *list = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(gs_cfg.host, gs_cfg.port, &hints, &list);
  if (rc != 0) {
    snprintf(err, errlen, "cannot resolve %s: %s", gs_cfg.host, gai_strerror(rc));
    return -1;
  }
  int fd = -1;
  for (struct addrinfo *ai = list; ai && fd < 0; ai = ai->ai_next) {
    fd = connect_one(ai->ai_family, ai->ai_addr, ai->ai_addrlen, err, errlen);
    if (fd >= 0 && atomic_load(&reached_family) == 0 && ai->ai_addrlen <= sizeof reached) {
      memcpy(&reached, ai->ai_addr, ai->ai_addrlen);
      reached_len = ai->ai_addrlen;
      atomic_store(&reached_family, ai->ai_family);
    }
  }
  freeaddrinfo(list);
  return fd;
}

/* The token's file, trimmed; empty when unset or unreadable (the server's 401 then says so). */
static void read_token(char *out, size_t n) {
  out[0] = '\0';
  if (!gs_cfg.token_file[0]) return;
  int fd = open(gs_cfg.token_file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t r = read(fd, out, n - 1);
  close(fd);
  if (r <= 0) return;
  out[r] = '\0';
  size_t len = (size_t)r;
  while (len && (out[len - 1] == '\n' || out[len - 1] == '\r' || out[len - 1] == ' ')) len--;
  out[len] = '\0';
  if (strpbrk(out, "\r\n")) out[0] = '\0'; /* not one token: never sent as a header */
}

static int send_request(int fd, const char *method, const char *path, const char *accept,
                        const char *body, long deadline, char *err, size_t errlen) {
  /* on the heap: the caller may be an application thread with a small stack */
  enum { TOKEN_MAX = 16384, REQ_MAX = TOKEN_MAX + 4096 };
  size_t body_len = body ? strlen(body) : 0;
  if (body_len > 1024) {
    snprintf(err, errlen, "request body too long");
    return -1;
  }
  char *token = malloc(TOKEN_MAX), *req = malloc(REQ_MAX);
  if (!token || !req) {
    free(token);
    free(req);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  read_token(token, TOKEN_MAX);
  int n = snprintf(req, REQ_MAX,
                   "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: libgpushare\r\nAccept: %s\r\n"
                   "%s%s%s%sContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                   method, path, gs_cfg.unix_path[0] ? "localhost" : gs_cfg.host, accept,
                   token[0] ? "Authorization: Bearer " : "", token, token[0] ? "\r\n" : "",
                   body_len ? "Content-Type: application/json\r\n" : "", body_len,
                   body ? body : "");
  free(token);
  int rc = 0;
  for (int off = 0; off < n && rc == 0;) {
    if (wait_fd(fd, POLLOUT, deadline) <= 0) {
      snprintf(err, errlen, "sending the request timed out");
      rc = -1;
      break;
    }
    ssize_t w = send(fd, req + off, (size_t)(n - off), MSG_NOSIGNAL);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (w < 0) {
      snprintf(err, errlen, "send: %s", strerror(errno));
      rc = -1;
    } else {
      off += (int)w;
    }
  }
  free(req);
  return rc;
}

/* ------------------------------------------------------------------ a response, incrementally */

struct gs_stream {
  int fd;
  char raw[65536];  /* bytes read, not yet decoded */
  size_t raw_len;
  int chunked;
  long chunk_left;  /* chunked: bytes left in the current chunk; -1 before a size line */
  long content_left; /* Content-Length: bytes left; -1 when unknown (read to EOF) */
  int eof;
  char *out;         /* decoded body (or, for a watch, the SSE text not yet parsed) */
  size_t out_len, out_cap;
};

static int fill(struct gs_stream *s, long deadline) {
  if (s->eof) return 0;
  if (s->raw_len == sizeof s->raw) return -1;
  int ready = wait_fd(s->fd, POLLIN, deadline);
  if (ready <= 0) return -1;
  ssize_t r = recv(s->fd, s->raw + s->raw_len, sizeof s->raw - s->raw_len, 0);
  if (r < 0) return errno == EINTR || errno == EAGAIN ? 1 : -1;
  if (r == 0) s->eof = 1;
  s->raw_len += (size_t)r;
  return r > 0;
}

static void consume(struct gs_stream *s, size_t n) {
  memmove(s->raw, s->raw + n, s->raw_len - n);
  s->raw_len -= n;
}

static int append(struct gs_stream *s, const char *p, size_t n) {
  if (s->out_len + n + 1 > s->out_cap) {
    size_t cap = s->out_cap ? s->out_cap * 2 : 4096;
    while (cap < s->out_len + n + 1) cap *= 2;
    if (cap > MAX_BODY) return -1;
    char *grown = realloc(s->out, cap);
    if (!grown) return -1;
    s->out = grown;
    s->out_cap = cap;
  }
  memcpy(s->out + s->out_len, p, n);
  s->out_len += n;
  s->out[s->out_len] = '\0';
  return 0;
}

/* Decodes what raw holds into out; 1 when the body is complete, 0 for more, -1 on bad framing. */
static int decode(struct gs_stream *s) {
  for (;;) {
    if (!s->chunked) {
      size_t n = s->raw_len;
      if (s->content_left >= 0 && (long)n > s->content_left) n = (size_t)s->content_left;
      if (n && append(s, s->raw, n) < 0) return -1;
      consume(s, n);
      if (s->content_left >= 0) s->content_left -= (long)n;
      if (s->content_left == 0 || (s->content_left < 0 && s->eof)) return 1;
      return s->eof ? -1 : 0; /* closed before Content-Length's bytes came: cut short */
    }
    if (s->chunk_left < 0) {
      char *crlf = memmem(s->raw, s->raw_len, "\r\n", 2);
      if (!crlf) return s->eof ? -1 : 0;
      char *stop;
      long size = strtol(s->raw, &stop, 16);
      if (stop == s->raw || size < 0) return -1;
      consume(s, (size_t)(crlf + 2 - s->raw));
      if (size == 0) return 1;
      s->chunk_left = size;
    }
    size_t n = s->raw_len < (size_t)s->chunk_left ? s->raw_len : (size_t)s->chunk_left;
    if (n && append(s, s->raw, n) < 0) return -1;
    consume(s, n);
    s->chunk_left -= (long)n;
    if (s->chunk_left > 0) return s->eof ? -1 : 0;
    if (s->raw_len < 2) return s->eof ? -1 : 0;
    if (memcmp(s->raw, "\r\n", 2) != 0) return -1;
    consume(s, 2);
    s->chunk_left = -1;
  }
}

/* Reads the status line and headers; 0 with *status, or -1 (err says why). */
static int read_head(struct gs_stream *s, long deadline, int *status, char *err, size_t errlen) {
  char *end;
  while ((end = memmem(s->raw, s->raw_len, "\r\n\r\n", 4)) == NULL) {
    int r = fill(s, deadline);
    if (r < 0 || (r == 0 && s->eof)) {
      snprintf(err, errlen, "%s", s->eof ? "the connection closed before an answer"
                                         : s->raw_len == sizeof s->raw ? "the answer's headers are too long"
                                                                       : "no answer in time");
      return -1;
    }
  }
  *end = '\0';
  int major, minor, code;
  if (sscanf(s->raw, "HTTP/%d.%d %d", &major, &minor, &code) != 3 || code < 100 || code > 999) {
    snprintf(err, errlen, "not an HTTP answer");
    return -1;
  }
  *status = code;
  s->content_left = -1;
  s->chunk_left = -1;
  for (char *line = strstr(s->raw, "\r\n"); line && line < end; line = strstr(line + 2, "\r\n")) {
    char *h = line + 2;
    if (strncasecmp(h, "Content-Length:", 15) == 0) s->content_left = strtol(h + 15, NULL, 10);
    if (strncasecmp(h, "Transfer-Encoding:", 18) == 0 && strcasestr(h, "chunked")) s->chunked = 1;
  }
  consume(s, (size_t)(end + 4 - s->raw));
  return 0;
}

static struct gs_stream *open_stream(const char *method, const char *path, const char *accept,
                                     const char *body, long deadline, int *status, char *err,
                                     size_t errlen) {
  int fd = open_connection(err, errlen);
  if (fd < 0) return NULL;
  struct gs_stream *s = calloc(1, sizeof *s);
  if (!s) {
    close(fd);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  s->fd = fd;
  if (send_request(fd, method, path, accept, body, deadline, err, errlen) < 0 ||
      read_head(s, deadline, status, err, errlen) < 0) {
    gs_watch_close(s);
    return NULL;
  }
  return s;
}

int gs_http(const char *method, const char *path, long timeout_ms, struct gs_response *out,
            char *err, size_t errlen) {
  return gs_http_body(method, path, NULL, timeout_ms, out, err, errlen);
}

int gs_http_body(const char *method, const char *path, const char *body, long timeout_ms,
                 struct gs_response *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  long deadline = now_ms() + timeout_ms;
  struct gs_stream *s = open_stream(method, path, "application/json", body, deadline, &out->status,
                                    err, errlen);
  if (!s) return -1;
  /* every way an answer can stop short (fewer bytes than Content-Length, a chunk cut off, the
   * connection closed mid-body, nothing more in time) ends here as an error by the deadline */
  int done;
  while ((done = decode(s)) == 0) {
    if (s->eof || fill(s, deadline) < 0) {
      done = -1;
      break;
    }
  }
  if (done < 0) {
    snprintf(err, errlen, "%s", s->eof ? "the answer was cut short" : "no whole answer in time");
    gs_watch_close(s);
    return -1;
  }
  if (append(s, "", 0) < 0) {
    gs_watch_close(s);
    snprintf(err, errlen, "the answer is too large");
    return -1;
  }
  out->body = s->out;
  out->len = s->out_len;
  s->out = NULL;
  gs_watch_close(s);
  return 0;
}

int gs_watch_open(const char *path, struct gs_stream **out, int *status, char *err,
                  size_t errlen) {
  *out = open_stream("GET", path, "text/event-stream", NULL, now_ms() + 30000, status, err, errlen);
  return *out ? 0 : -1;
}

/* One Server-Sent Event: the "data:" lines of the text before a blank line. */
static int next_event(struct gs_stream *s, char **data, size_t *len) {
  for (;;) {
    char *blank = s->out ? strstr(s->out, "\n\n") : NULL;
    if (!blank) return 0;
    size_t event_len = (size_t)(blank - s->out) + 2;
    char *event = s->out;
    event[event_len - 1] = '\0';
    size_t w = 0;
    for (char *line = event; line && *line;) {
      char *nl = strchr(line, '\n');
      if (nl) *nl = '\0';
      if (strncmp(line, "data:", 5) == 0) {
        const char *v = line[5] == ' ' ? line + 6 : line + 5;
        size_t vl = strlen(v);
        if (w) event[w++] = '\n';
        memmove(event + w, v, vl);
        w += vl;
      }
      line = nl ? nl + 1 : NULL;
    }
    if (w) {
      char *copy = malloc(w + 1);
      if (!copy) return -1;
      memcpy(copy, event, w);
      copy[w] = '\0';
      *data = copy;
      *len = w;
    }
    memmove(s->out, s->out + event_len, s->out_len - event_len + 1);
    s->out_len -= event_len;
    if (w) return 1; /* else a heartbeat (":"): look for the next one */
  }
}

int gs_watch_next(struct gs_stream *s, char **data, size_t *len, long idle_ms) {
  for (;;) {
    int done = decode(s); /* what read_head or the last fill left undecoded comes first */
    if (done < 0) return -1;
    int got = next_event(s, data, len);
    if (got != 0) return got;
    if (done == 1 || (s->eof && s->raw_len == 0)) return 0;
    if (s->eof) return -1; /* bytes left that make no whole event, and no more will come */
    if (fill(s, now_ms() + idle_ms) < 0) return -1;
  }
}

void gs_watch_close(struct gs_stream *s) {
  if (!s) return;
  close(s->fd);
  free(s->out);
  free(s);
}

static size_t put(char *buf, size_t at, size_t cap, const char *s) {
  while (*s && at + 1 < cap) buf[at++] = *s++;
  buf[at] = '\0';
  return at;
}

int gs_http_signal_safe(const char *method, const char *path) {
  int family = gs_cfg.unix_path[0] ? AF_UNIX : atomic_load(&reached_family);
  if (family == 0) return -1;
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct timeval tv = {2, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int rc;
  if (family == AF_UNIX) {
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    put(a.sun_path, 0, sizeof a.sun_path, gs_cfg.unix_path);
    rc = connect(fd, (struct sockaddr *)&a, sizeof a);
  } else {
    rc = connect(fd, (struct sockaddr *)&reached, reached_len);
  }
  char token[8192] = "";
  if (gs_cfg.token_file[0]) {
    int tf = open(gs_cfg.token_file, O_RDONLY | O_CLOEXEC);
    if (tf >= 0) {
      ssize_t n = read(tf, token, sizeof token - 1);
      close(tf);
      token[n > 0 ? n : 0] = '\0';
      size_t len = strlen(token);
      while (len && (token[len - 1] == '\n' || token[len - 1] == '\r' || token[len - 1] == ' '))
        token[--len] = '\0';
    }
  }
  char req[sizeof token + 1024];
  size_t at = 0;
  at = put(req, at, sizeof req, method);
  at = put(req, at, sizeof req, " ");
  at = put(req, at, sizeof req, path);
  at = put(req, at, sizeof req, " HTTP/1.1\r\nHost: ");
  at = put(req, at, sizeof req, gs_cfg.unix_path[0] ? "localhost" : gs_cfg.host);
  if (token[0] && !strpbrk(token, "\r\n")) {
    at = put(req, at, sizeof req, "\r\nAuthorization: Bearer ");
    at = put(req, at, sizeof req, token);
  }
  at = put(req, at, sizeof req, "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  if (rc == 0 && send(fd, req, at, MSG_NOSIGNAL) == (ssize_t)at) {
    char answer[64];
    rc = recv(fd, answer, sizeof answer, 0) > 0 ? 0 : -1; /* the answer: the server has it */
  } else {
    rc = -1;
  }
  close(fd);
  return rc;
}
