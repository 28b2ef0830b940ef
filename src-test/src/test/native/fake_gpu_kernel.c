/*
 * The fake GPU driver's "kernel" for the tests' real node (RealNode): a real driver names a
 * process by its host PID, whatever PID namespace the process runs in. The fake libcuda.so.1
 * learns its own host PID here when FAKE_GPU_KERNEL names this socket: it connects, and this
 * listener, which runs on the host, answers the PID of the peer as the host sees it (SO_PEERCRED,
 * translated by the kernel into this process's PID namespace) in decimal and a newline, then
 * closes the connection.
 *
 *   fake_gpu_kernel SOCKET     listens on SOCKET (a Unix stream socket, mode 0666, replaced if
 *                              it exists), prints "ready" on stdout, answers until killed
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 2 || strlen(argv[1]) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
    fprintf(stderr, "usage: fake_gpu_kernel SOCKET (a path shorter than 108 bytes)\n");
    return 64;
  }
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  strcpy(addr.sun_path, argv[1]);
  int server = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  unlink(argv[1]);
  if (server < 0 || bind(server, (struct sockaddr *)&addr, sizeof addr) != 0 ||
      chmod(argv[1], 0666) != 0 || listen(server, 64) != 0) {
    perror("fake_gpu_kernel: listen");
    return 1;
  }
  printf("ready\n");
  fflush(stdout);
  for (;;) {
    int c = accept4(server, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    struct ucred cred;
    socklen_t len = sizeof cred;
    char line[32];
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      int n = snprintf(line, sizeof line, "%d\n", (int)cred.pid);
      ssize_t w = write(c, line, (size_t)n);
      (void)w;
    }
    close(c);
  }
}
