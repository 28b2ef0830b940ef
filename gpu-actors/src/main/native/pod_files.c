/*
 * The pod's shared files (SPEC §10): the memory count (memory.c) and the compute limit's bucket
 * (limiter.c), each a small file every process of the pod maps.
 *
 * They live in a directory of their own per pod, <GPUSHARE_STATE_DIR>/gpushare-<pod uid> (the
 * pod view's "uid"; gpushare-<ns>_<name> when the data plane gives none), mode 0700. The uid in the
 * name binds the files to one pod: a new pod of the same name (another uid) never counts on the
 * counts of a deleted one, which a shared /dev/shm (MPS nodes) keeps. Nothing is followed through
 * a link: the directory is opened with O_NOFOLLOW | O_DIRECTORY and checked with fstat (a
 * directory, this user's, no access for others), the files are opened relative to it with
 * O_NOFOLLOW and checked the same way, so a link planted at either path is refused, never used.
 * Each file starts with a header (GS_POD_FILE_HEADER bytes): a magic, the payload's stamp (its kind
 * and layout version), its size, the pod's uid and NS/NAME; a file whose header differs (another
 * version of gpushare, another pod's file put there) is not used, and that is said once. A new file
 * is written whole under a temporary name and linked into place, so no process ever maps a file
 * whose header is not written yet.
 *
 * What this cannot do: keep out a process of another pod that runs under the same UID and sees the
 * same directory. The file system gives every process of a UID the same rights; it may open this
 * directory by its name like this pod's own processes do. Against that, give each pod its own
 * /dev/shm (the container's own, the default) or its own UID; what the files here guarantee is that
 * pods never share or reuse each other's files by accident, and that a link or a foreign file is
 * never written through.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpushare.h"

#define POD_FILE_MAGIC 0x6572616873757067ULL /* "gpushare" */

struct file_head {
  uint64_t magic;
  uint64_t stamp;
  uint64_t size;
  char uid[64];
  char pod[520]; /* NS/NAME */
};
_Static_assert(sizeof(struct file_head) <= GS_POD_FILE_HEADER, "the header fits its place");

static pthread_mutex_t dir_mu = PTHREAD_MUTEX_INITIALIZER;
static int dir_fd = -1;
static char uid[64];

void gs_pod_set_uid(const char *u) {
  pthread_mutex_lock(&dir_mu);
  if (!uid[0] && dir_fd < 0 && u) {
    /* a Kubernetes uid (a UUID); anything else is not put in a file name */
    size_t n = strlen(u);
    int ok = n > 0 && n < sizeof uid;
    for (size_t i = 0; ok && i < n; i++) {
      char c = u[i];
      ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
    }
    if (ok) memcpy(uid, u, n + 1);
  }
  pthread_mutex_unlock(&dir_mu);
}

static void dir_name(char *out, size_t n) {
  if (uid[0]) snprintf(out, n, "gpushare-%s", uid);
  else snprintf(out, n, "gpushare-%s_%s", gs_cfg.ns, gs_cfg.name);
}

/* Under dir_mu: the pod's directory, opened once (and again after a failure). */
static int open_dir(char *why, size_t n) {
  if (dir_fd >= 0) return dir_fd;
  char name[600];
  dir_name(name, sizeof name);
  int base = open(gs_cfg.state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (base < 0) {
    snprintf(why, n, "cannot open GPUSHARE_STATE_DIR %s (%s)", gs_cfg.state_dir, strerror(errno));
    return -1;
  }
  if (mkdirat(base, name, 0700) != 0 && errno != EEXIST) {
    snprintf(why, n, "cannot make the pod's directory %s/%s (%s)", gs_cfg.state_dir, name,
             strerror(errno));
    close(base);
    return -1;
  }
  int d = openat(base, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int e = errno;
  close(base);
  struct stat st;
  if (d < 0) {
    snprintf(why, n, "the pod's directory %s/%s cannot be opened without following a link (%s)",
             gs_cfg.state_dir, name, strerror(e));
    return -1;
  }
  if (fstat(d, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 077) != 0) {
    snprintf(why, n, "the pod's directory %s/%s is not this user's private directory (owner %d, "
             "mode %o; expected %d, 700)", gs_cfg.state_dir, name, (int)st.st_uid,
             (unsigned)(st.st_mode & 07777), (int)geteuid());
    close(d);
    return -1;
  }
  dir_fd = d;
  return d;
}

/* A new file, written whole under a temporary name, then linked at `kind` (another process may
 * have linked its own first: that one is used). */
static void create(int d, const char *kind, size_t size, uint64_t stamp) {
  char tmp[64];
  snprintf(tmp, sizeof tmp, ".%s.%d", kind, (int)getpid());
  unlinkat(d, tmp, 0);
  int fd = openat(d, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  struct file_head h;
  memset(&h, 0, sizeof h);
  h.magic = POD_FILE_MAGIC;
  h.stamp = stamp;
  h.size = size;
  snprintf(h.uid, sizeof h.uid, "%s", uid);
  snprintf(h.pod, sizeof h.pod, "%s/%s", gs_cfg.ns, gs_cfg.name);
  if (ftruncate(fd, (off_t)(GS_POD_FILE_HEADER + size)) == 0 &&
      pwrite(fd, &h, sizeof h, 0) == (ssize_t)sizeof h) {
    (void)linkat(d, tmp, d, kind, 0);
  }
  unlinkat(d, tmp, 0);
  close(fd);
}

int gs_pod_file_open(const char *kind, size_t size, uint64_t stamp, void **payload, char *why,
                     size_t n) {
  pthread_mutex_lock(&dir_mu);
  int d = open_dir(why, n);
  int fd = -1;
  char name[600];
  dir_name(name, sizeof name);
  if (d >= 0) {
    fd = openat(d, kind, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      create(d, kind, size, stamp);
      fd = openat(d, kind, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      snprintf(why, n, "cannot open %s/%s/%s without following a link (%s)", gs_cfg.state_dir,
               name, kind, strerror(errno));
    }
  }
  pthread_mutex_unlock(&dir_mu);
  if (fd < 0) return -1;
  struct stat st;
  const size_t total = GS_POD_FILE_HEADER + size;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
      st.st_size != (off_t)total) {
    snprintf(why, n, "%s/%s/%s is not a file of this version of gpushare for this pod (not a "
             "regular file of this user of %zu bytes)", gs_cfg.state_dir, name, kind, total);
    close(fd);
    return -1;
  }
  void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    snprintf(why, n, "cannot map %s/%s/%s (%s)", gs_cfg.state_dir, name, kind, strerror(errno));
    close(fd);
    return -1;
  }
  const struct file_head *h = m;
  char pod[sizeof h->pod];
  snprintf(pod, sizeof pod, "%s/%s", gs_cfg.ns, gs_cfg.name);
  if (h->magic != POD_FILE_MAGIC || h->stamp != stamp || h->size != size ||
      strncmp(h->uid, uid, sizeof h->uid) != 0 || strncmp(h->pod, pod, sizeof h->pod) != 0) {
    snprintf(why, n, "%s/%s/%s was written by another version of gpushare or for another pod "
             "(stamp %llx, pod %.64s, uid %.64s): it is not used", gs_cfg.state_dir, name, kind,
             (unsigned long long)h->stamp, h->magic == POD_FILE_MAGIC ? h->pod : "?",
             h->magic == POD_FILE_MAGIC ? h->uid : "?");
    munmap(m, total);
    close(fd);
    return -1;
  }
  *payload = (char *)m + GS_POD_FILE_HEADER;
  return fd;
}

void gs_pod_files_after_fork(void) { pthread_mutex_init(&dir_mu, NULL); }
