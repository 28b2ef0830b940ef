/*
 * Shared by the fake libcuda.so.1 and libnvidia-ml.so.1 (each includes it once): the driver's
 * settings on the node. A real driver needs no environment (its kernel module and
 * /proc/driver/nvidia say what it is), and a process started in a container by `kubectl exec` gets
 * the container's environment without what the NVIDIA runtime added. So the FAKE_* settings are
 * also read from a file of the fake GPU's device folder, FAKE_GPU_CONFIG or /dev/fake-gpu/config
 * (KEY=VALUE lines), each taken unless the environment sets it.
 */
#ifndef FAKE_CONFIG_H
#define FAKE_CONFIG_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((constructor)) static void fake_driver_config(void) {
  const char *path = getenv("FAKE_GPU_CONFIG");
  FILE *f = fopen(path && *path ? path : "/dev/fake-gpu/config", "re");
  if (!f) return;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    char *eq = strchr(line, '=');
    if (!eq || strncmp(line, "FAKE_", 5) != 0) continue;
    *eq = '\0';
    setenv(line, eq + 1, 0);
  }
  fclose(f);
}

#endif
