/*
 * What NVML says of one GPU's utilisation over time, as a monitor would sample it: the GPU's
 * percent and each process's, for the virtual GPU of the fakes (FAKE_GPU_FILE, see
 * gpu-check/fake-nvml/fake_nvml.c). Not meant to run under libgpushare.so: it links NVML itself.
 *
 *   gcc -std=c17 -O2 -Wall -Wextra -D_GNU_SOURCE -o gpu_util gpu_util.c \
 *       -L<dir of libnvidia-ml.so.1> -l:libnvidia-ml.so.1
 *   ./gpu_util --uuid GPU-... [--seconds S] [--every-ms N]
 *
 *   --uuid U       the GPU (nvmlDeviceGetHandleByUUID)
 *   --seconds S    how long it samples (default 1; a fraction is fine)
 *   --every-ms N   the sampling period (default 100)
 *
 * Every N ms (at start + N, start + 2N, ...) one line on stdout:
 *   <t_ms> <gpu_percent> [<pid>:<percent> ...]
 * t_ms the milliseconds since the start, gpu_percent nvmlDeviceGetUtilizationRates' gpu, then one
 * pid:smUtil per sample of nvmlDeviceGetProcessUtilization (lastSeen 0; none when it answers
 * NVML_ERROR_NOT_FOUND). A failing call shows as err<code> in its value's place. Exit status 1
 * when nvmlInit_v2 or the lookup fails, 2 on a usage error, else 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u);
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t *s,
                                             unsigned int *n, unsigned long long lastSeen);

static int usage(const char *why) {
  fprintf(stderr, "gpu_util: %s\nusage: gpu_util --uuid GPU-... [--seconds S] [--every-ms N]\n",
          why);
  return 2;
}

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void sleep_until(long long ns) {
  struct timespec t = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {
  }
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *uuid = NULL;
  double seconds = 1;
  long long every_ms = 100;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc) return usage("each option takes a value");
    char *end;
    if (strcmp(argv[i], "--uuid") == 0) {
      uuid = argv[++i];
    } else if (strcmp(argv[i], "--seconds") == 0) {
      seconds = strtod(argv[++i], &end);
      if (*end || seconds < 0) return usage("--seconds takes a number of seconds");
    } else if (strcmp(argv[i], "--every-ms") == 0) {
      every_ms = strtoll(argv[++i], &end, 10);
      if (*end || every_ms <= 0) return usage("--every-ms takes a number of milliseconds > 0");
    } else {
      return usage("unknown option");
    }
  }
  if (!uuid) return usage("--uuid is needed");

  nvmlDevice_t d;
  nvmlReturn_t rc = nvmlInit_v2();
  if (rc) {
    fprintf(stderr, "nvmlInit_v2 -> %d\n", rc);
    return 1;
  }
  if ((rc = nvmlDeviceGetHandleByUUID(uuid, &d))) {
    fprintf(stderr, "nvmlDeviceGetHandleByUUID(%s) -> %d\n", uuid, rc);
    return 1;
  }
  long long start = now_ns(), stop = start + (long long)(seconds * 1e9);
  for (long long at = start + every_ms * 1000000LL; at <= stop; at += every_ms * 1000000LL) {
    sleep_until(at);
    char line[4096];
    size_t o = (size_t)snprintf(line, sizeof line, "%lld", (at - start) / 1000000LL);
    nvmlUtilization_t u;
    rc = nvmlDeviceGetUtilizationRates(d, &u);
    o += (size_t)(rc ? snprintf(line + o, sizeof line - o, " err%d", rc)
                     : snprintf(line + o, sizeof line - o, " %u", u.gpu));
    nvmlProcessUtilizationSample_t samples[64];
    unsigned int n = 64;
    rc = nvmlDeviceGetProcessUtilization(d, samples, &n, 0);
    if (rc == 0) {
      for (unsigned int k = 0; k < n && k < 64 && o < sizeof line - 32; k++) {
        o += (size_t)snprintf(line + o, sizeof line - o, " %u:%u", samples[k].pid,
                              samples[k].smUtil);
      }
    } else if (rc != NVML_ERROR_NOT_FOUND && o < sizeof line - 32) {
      snprintf(line + o, sizeof line - o, " err%d", rc);
    }
    printf("%s\n", line);
  }
  return 0;
}
