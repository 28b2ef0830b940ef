#!/usr/bin/env bash
# Runs the GPU check on a GPU machine, from the bundle that build.sh made (no Java, no CUDA
# runtime needed there: only the NVIDIA driver's libnvidia-ml.so.1). Prints what it finds of the
# driver, then GpuCheck's discovery and telemetry. Exit status: GpuCheck's (0 OK, 2 NVML
# unavailable, 3 an NVML call failed).
#
#   ./run.sh                  # one sample
#   ./run.sh 3 1000           # three samples, one second apart
#   NVML_LIB_DIR=/opt/nvidia/lib64 ./run.sh   # libnvidia-ml.so.1 somewhere unusual
set -uo pipefail

bundle="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
java="$bundle/runtime/bin/java"
[[ -x $java ]] || { echo "no Java runtime at $java: run build.sh first and use its bundle" >&2; exit 1; }

echo "== host: $(uname -srm)"
if command -v ldd >/dev/null; then
  echo "   glibc: $(ldd --version 2>/dev/null | head -1 | grep -oE '[0-9]+\.[0-9]+$' || echo unknown)" \
    "(the JavaCPP JNI libraries need 2.34 or later)"
fi

echo "== libnvidia-ml.so.1"
nvml=""
ldconfig_bin="$(command -v ldconfig || echo /sbin/ldconfig)"
if [[ -x $ldconfig_bin ]]; then
  nvml="$("$ldconfig_bin" -p 2>/dev/null | awk '/libnvidia-ml\.so\.1 .*x86-64/ {print $NF; exit}')"
  [[ -n $nvml ]] && echo "   ldconfig: $nvml"
fi
if [[ -z $nvml ]]; then
  for dir in ${NVML_LIB_DIR:-} /usr/lib/x86_64-linux-gnu /usr/local/nvidia/lib64 /usr/lib64 \
             /usr/local/nvidia/lib /usr/lib; do
    if [[ -e $dir/libnvidia-ml.so.1 ]]; then
      nvml="$dir/libnvidia-ml.so.1"
      echo "   found: $nvml"
      break
    fi
  done
fi
# JavaCPP extracts libjninvml.so and libjnijavacpp.so here.
cache="${GPU_CHECK_CACHE:-}"
if [[ -z $cache ]]; then
  cache="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-cache.XXXXXX")"
  trap 'rm -rf "$cache"' EXIT
fi
java_opts=("-Dorg.bytedeco.javacpp.cachedir=$cache")
if [[ -n $nvml ]]; then
  real="$(readlink -f "$nvml")"
  echo "   -> $real"
  # JavaCPP's own search honours this property; the dynamic linker would not look there.
  java_opts+=("-Dorg.bytedeco.javacpp.platform.preloadpath=$(dirname "$nvml")")
else
  echo "   NOT FOUND (ldconfig -p, ${NVML_LIB_DIR:+$NVML_LIB_DIR, }/usr/lib/x86_64-linux-gnu," \
    "/usr/local/nvidia/lib64, /usr/lib64)"
fi

echo "== driver"
if [[ -r /proc/driver/nvidia/version ]]; then
  sed -n '1s/^/   /p' /proc/driver/nvidia/version
else
  echo "   no /proc/driver/nvidia/version (the NVIDIA kernel module is not loaded, or not visible)"
fi
if command -v nvidia-smi >/dev/null; then
  nvidia-smi 2>&1 | grep -m1 -E 'Driver Version|CUDA Version' | sed 's/^/   /; s/|//g'
  nvidia-smi --query-gpu=index,name,uuid,memory.total --format=csv,noheader 2>&1 | sed 's/^/   /'
else
  echo "   no nvidia-smi"
fi
cudart="$("$ldconfig_bin" -p 2>/dev/null | grep -oE 'libcudart\.so\.[0-9]+' | sort -u | xargs)"
echo "   CUDA runtimes installed: ${cudart:-none} (not needed: the check loads only NVML)"

echo "== GpuCheck"
"$java" "${java_opts[@]}" -cp "$bundle/lib/*" dev.gpushare.gpu.nvml.GpuCheck "$@" 2>&1
rc=$?
echo "== exit status $rc"
exit $rc
