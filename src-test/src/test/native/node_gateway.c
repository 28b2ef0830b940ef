/*
 * The network gateway of the tests' real node (RealNode). The node (containerd, the kubelet, the
 * pods' bridge) lives in a network namespace of the test's own; the control plane and the test
 * listen on the host's loopback. This one process has a foot in both namespaces (a socket keeps
 * the namespace it was created in) and forwards TCP between them, so that nothing is added to the
 * host's network: no interface, no address, no route, no firewall rule.
 *
 *   node_gateway NETNS RULE...
 *
 * NETNS is the node's namespace file (/run/netns/NAME). Each RULE is one of:
 *   node:ADDR:PORT=host:ADDR:PORT   listen on ADDR:PORT in the node's namespace, and connect each
 *                                   connection to ADDR:PORT on the host (the kubelet and the pods
 *                                   reaching the API server, the pods reaching PostgreSQL)
 *   host:PATH=node                  listen on the Unix socket PATH on the host; each connection
 *                                   first sends "ADDR:PORT\n", is connected to ADDR:PORT in the
 *                                   node's namespace and answered "OK\n" (else "ERR <why>\n" and
 *                                   closed): the test and the API server reaching the kubelet and
 *                                   the pods
 * A listening address need not be assigned yet (IP_FREEBIND). It prints "ready" on stdout once
 * every listener is bound, and forwards until killed; each connection is one child process, which
 * dies with it (PR_SET_PDEATHSIG).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_RULES 16

struct rule {
  int listener;
  int dynamic;             /* host:PATH=node */
  struct sockaddr_in to;   /* the fixed target on the host (node:…=host:…) */
};

static int host_ns, node_ns;

static void die(const char *what) {
  fprintf(stderr, "node_gateway: %s: %s\n", what, strerror(errno));
  exit(1);
}

static int parse_addr(const char *text, struct sockaddr_in *out) {
  char host[64];
  const char *colon = strrchr(text, ':');
  if (!colon || colon - text >= (long)sizeof host) return -1;
  memcpy(host, text, (size_t)(colon - text));
  host[colon - text] = 0;
  memset(out, 0, sizeof *out);
  out->sin_family = AF_INET;
  int port = atoi(colon + 1);
  if (port <= 0 || port > 65535 || inet_pton(AF_INET, host, &out->sin_addr) != 1) return -1;
  out->sin_port = htons((unsigned short)port);
  return 0;
}

/* A TCP socket created in namespace ns (the calling process goes back to the host's after). */
static int tcp_socket_in(int ns) {
  if (setns(ns, CLONE_NEWNET) != 0) die("setns");
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int saved = errno;
  if (setns(host_ns, CLONE_NEWNET) != 0) die("setns back to the host");
  errno = saved;
  return s;
}

/* Copies both ways until both sides have ended; each end is half-closed when the other ends. */
static void relay(int a, int b) {
  char buf[65536];
  int open_a = 1, open_b = 1;
  while (open_a || open_b) {
    struct pollfd p[2] = {{.fd = open_a ? a : -1, .events = POLLIN},
                          {.fd = open_b ? b : -1, .events = POLLIN}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < 2; i++) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int from = i == 0 ? a : b, to = i == 0 ? b : a;
      ssize_t n = read(from, buf, sizeof buf);
      if (n <= 0) {
        shutdown(to, SHUT_WR);
        if (i == 0) open_a = 0; else open_b = 0;
        continue;
      }
      for (ssize_t done = 0; done < n;) {
        ssize_t w = write(to, buf + done, (size_t)(n - done));
        if (w <= 0) return;
        done += w;
      }
    }
  }
}

/* One accepted connection, in its own child process. */
static void serve(struct rule *r, int client) {
  struct sockaddr_in to = r->to;
  int ns = host_ns;
  if (r->dynamic) {
    char line[80];
    size_t n = 0;
    while (n < sizeof line - 1) {
      ssize_t got = read(client, line + n, 1);
      if (got <= 0) exit(0);
      if (line[n] == '\n') break;
      n++;
    }
    line[n] = 0;
    if (parse_addr(line, &to) != 0) {
      dprintf(client, "ERR bad target '%s'\n", line);
      exit(0);
    }
    ns = node_ns;
  }
  int up = tcp_socket_in(ns);
  if (up < 0 || connect(up, (struct sockaddr *)&to, sizeof to) != 0) {
    if (r->dynamic) dprintf(client, "ERR %s\n", strerror(errno));
    exit(0);
  }
  if (r->dynamic && write(client, "OK\n", 3) != 3) exit(0);
  relay(client, up);
  exit(0);
}

int main(int argc, char **argv) {
  if (argc < 3 || argc - 2 > MAX_RULES) {
    fprintf(stderr, "usage: node_gateway NETNS RULE... (at most %d rules)\n", MAX_RULES);
    return 64;
  }
  host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  node_ns = open(argv[1], O_RDONLY | O_CLOEXEC);
  if (host_ns < 0 || node_ns < 0) die("open the network namespaces");
  signal(SIGCHLD, SIG_IGN); /* children are reaped by the kernel */
  signal(SIGPIPE, SIG_IGN);

  struct rule rules[MAX_RULES];
  struct pollfd polls[MAX_RULES];
  int count = argc - 2;
  for (int i = 0; i < count; i++) {
    char *spec = argv[i + 2];
    char *eq = strchr(spec, '=');
    struct rule *r = &rules[i];
    memset(r, 0, sizeof *r);
    if (eq) *eq = 0;
    if (eq && strncmp(spec, "node:", 5) == 0 && strncmp(eq + 1, "host:", 5) == 0) {
      struct sockaddr_in at;
      if (parse_addr(spec + 5, &at) != 0 || parse_addr(eq + 6, &r->to) != 0) goto bad;
      int one = 1;
      r->listener = tcp_socket_in(node_ns);
      if (r->listener < 0 ||
          setsockopt(r->listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
          setsockopt(r->listener, IPPROTO_IP, IP_FREEBIND, &one, sizeof one) != 0 ||
          bind(r->listener, (struct sockaddr *)&at, sizeof at) != 0)
        die(spec);
    } else if (eq && strncmp(spec, "host:", 5) == 0 && strcmp(eq + 1, "node") == 0) {
      struct sockaddr_un at = {.sun_family = AF_UNIX};
      if (strlen(spec + 5) >= sizeof at.sun_path) goto bad;
      strcpy(at.sun_path, spec + 5);
      unlink(at.sun_path);
      r->dynamic = 1;
      r->listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (r->listener < 0 || bind(r->listener, (struct sockaddr *)&at, sizeof at) != 0)
        die(spec);
    } else {
      goto bad;
    }
    if (listen(r->listener, 128) != 0) die("listen");
    polls[i] = (struct pollfd){.fd = r->listener, .events = POLLIN};
    continue;
  bad:
    fprintf(stderr, "node_gateway: bad rule '%s'\n", argv[i + 2]);
    return 64;
  }
  printf("ready\n");
  fflush(stdout);

  for (;;) {
    if (poll(polls, (nfds_t)count, -1) < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    for (int i = 0; i < count; i++) {
      if (!(polls[i].revents & POLLIN)) continue;
      int client = accept4(rules[i].listener, NULL, NULL, SOCK_CLOEXEC);
      if (client < 0) continue;
      pid_t pid = fork();
      if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (int j = 0; j < count; j++) close(rules[j].listener);
        serve(&rules[i], client);
      }
      close(client);
    }
  }
}
