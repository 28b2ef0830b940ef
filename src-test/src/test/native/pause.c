/*
 * The pause image's one program (RealNode's sandbox image, built static: the image holds nothing
 * else): the pod's infrastructure container, which holds the pod's namespaces. It waits for a
 * signal, reaps the children that end up with it, and exits 0 on SIGTERM or SIGINT, as
 * Kubernetes' own pause does.
 *
 * build: -static
 */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction a = {.sa_handler = stop};
  sigaction(SIGTERM, &a, NULL);
  sigaction(SIGINT, &a, NULL);
  struct sigaction r = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
  sigaction(SIGCHLD, &r, NULL);
  for (;;) pause();
}
