#!/usr/bin/env bash
# The CUDA checkpoint GPU check (issue 16), for a lent GPU machine: builds fill.cu with nvcc,
# starts it (it fills GIB GiB of device memory), checkpoints it with the member's own code
# (CheckpointCheck: Checkpointer over CudaDriver), shows with nvidia-smi that its memory is free
# while the state is in host memory, restores it and has it verify every word. Prints the time to
# checkpoint and to restore per GiB. Run from the repository root after
# `mvn -B -q -DskipTests package -pl gpu-actors -am`:
#
#   bash gpu-actors/gpu-check/checkpoint/run.sh            # 1, 4 and 16 GiB
#   GIBS="2 8" bash gpu-actors/gpu-check/checkpoint/run.sh
#
# Needs: the NVIDIA driver R570+ (CUDA 12.8+), nvcc, libcudart.so.12, Java 17, root (the driver
# checkpoints another process). Exit status: 0 all sizes verified, else the first failure's.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
here="$root/gpu-actors/gpu-check/checkpoint"
out="${OUT:-$root/gpu-actors/target/checkpoint-check}"
mkdir -p "$out"
nvcc -O2 -o "$out/fill" "$here/fill.cu" || { echo "nvcc failed" >&2; exit 4; }
cp="$root/gpu-actors/target/classes:$(cd "$root" && mvn -B -q -o -pl gpu-actors \
  org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath -Dmdep.outputFile=/dev/stdout \
  -Dmdep.includeScope=runtime 2>/dev/null)"
cudalib="$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')")"
rtlib="$(dirname "$(ldconfig -p | awk '/libcudart\.so\.12 .*x86-64/ {print $NF; exit}')" 2>/dev/null || true)"
[[ -d /usr/local/cuda/lib64 ]] && rtlib="${rtlib:+$rtlib:}/usr/local/cuda/lib64"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
status=0
for gib in ${GIBS:-1 4 16}; do
  echo "== $gib GiB" | tee -a "$out/results.txt"
  coproc FILL { "$out/fill" "$gib"; }
  read -r word pid bytes <&"${FILL[0]}"
  [[ $word == ready ]] || { echo "fill did not start: $word" >&2; status=5; break; }
  java -Dorg.bytedeco.javacpp.platform.preloadpath="$cudalib:$rtlib" \
       -Dorg.bytedeco.javacpp.cachedir="$out/javacpp" -cp "$cp" dev.gpushare.gpu.cuda.CheckpointCheck \
       "$pid" --bytes "$bytes" \
       --between "nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; nvidia-smi --query-gpu=memory.used --format=csv,noheader" \
       2>&1 | tee -a "$out/results.txt"
  rc=${PIPESTATUS[0]}
  echo verify >&"${FILL[1]}"
  read -r result <&"${FILL[0]}"
  echo "fill: $result" | tee -a "$out/results.txt"
  wait "$FILL_PID" 2>/dev/null
  [[ $rc -eq 0 && $result == verified* ]] || { status=${rc:-1}; [[ $status -eq 0 ]] && status=1; }
done
exit $status
