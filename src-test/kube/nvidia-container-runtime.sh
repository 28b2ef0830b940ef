#!/usr/bin/env bash
# The real node's container runtime (RealNode): runc, behind what the legacy
# nvidia-container-runtime does, with the tests' fake GPU driver instead of NVIDIA's. containerd's
# runc shim calls this as it would call runc (BinaryName); on `create`, when the container's
# environment has NVIDIA_VISIBLE_DEVICES (not empty, void or none), the bundle's config.json gets
#   * the fake libnvidia-ml.so.1 at /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 (capability
#     utility) and the fake libcuda.so.1 at /usr/lib/x86_64-linux-gnu/libcuda.so.1 (compute), as
#     NVIDIA_DRIVER_CAPABILITIES asks (unset: utility,compute; all: both), read-only;
#   * the "device" directory /dev/fake-gpu, read-write: the virtual GPU's file and the fake
#     driver's kernel socket (FAKE_GPU_KERNEL) live there;
#   * FAKE_GPU_FILE, FAKE_GPU_KERNEL, FAKE_CUDA_UUIDS, FAKE_NVML_UUIDS (the visible GPUs: all, or
#     those NVIDIA_VISIBLE_DEVICES names by index or UUID) and FAKE_CUDA_MEMORY;
# then the real runc runs with the same arguments. Everything else goes to runc unchanged.
#
# Set by the node's own wrapper (RealNode writes it): GPUSHARE_RUNC (the real runc),
# GPUSHARE_FAKE_NVML, GPUSHARE_FAKE_CUDA (the fake libraries), GPUSHARE_FAKE_GPU_DIR (the host's
# device directory), GPUSHARE_GPU_UUIDS (comma-separated), GPUSHARE_GPU_MEMORY (bytes),
# GPUSHARE_RUNTIME_LOG (one line per container given a GPU). Needs jq.
set -euo pipefail

args=("$@")
command="" bundle=""
for ((i = 0; i < ${#args[@]}; i++)); do
  a="${args[i]}"
  if [[ -z $command ]]; then
    case "$a" in
      --root | --log | --log-format | --criu) i=$((i + 1)) ;;
      -*) ;;
      *) command="$a" ;;
    esac
    continue
  fi
  case "$a" in
    --bundle | -b) bundle="${args[i + 1]}" ;;
    --bundle=*) bundle="${a#--bundle=}" ;;
  esac
done

if [[ $command == create && -n $bundle && -f $bundle/config.json ]]; then
  config="$bundle/config.json"
  visible="$(jq -r '(.process.env // [])[] | select(startswith("NVIDIA_VISIBLE_DEVICES=")) | sub("^[^=]*="; "")' "$config" | tail -n 1)"
  if [[ -n $visible && $visible != void && $visible != none ]]; then
    caps="$(jq -r '(.process.env // [])[] | select(startswith("NVIDIA_DRIVER_CAPABILITIES=")) | sub("^[^=]*="; "")' "$config" | tail -n 1)"
    [[ -z $caps ]] && caps="utility,compute"
    IFS=, read -r -a all <<<"$GPUSHARE_GPU_UUIDS"
    uuids=()
    if [[ $visible == all ]]; then
      uuids=("${all[@]}")
    else
      IFS=, read -r -a wanted <<<"$visible"
      for w in "${wanted[@]}"; do
        if [[ $w =~ ^[0-9]+$ ]] && ((w < ${#all[@]})); then uuids+=("${all[w]}"); else uuids+=("$w"); fi
      done
    fi
    list="$(IFS=,; echo "${uuids[*]}")"
    mounts='[{"destination":"/dev/fake-gpu","type":"bind","source":$dir,"options":["rbind","rw","nosuid"]}]'
    lib=/usr/lib/x86_64-linux-gnu
    if [[ $caps == all || ,$caps, == *,utility,* ]]; then
      mounts+=" + [{\"destination\":\"$lib/libnvidia-ml.so.1\",\"type\":\"bind\",\"source\":\$nvml,\"options\":[\"rbind\",\"ro\",\"nosuid\",\"nodev\"]}]"
    fi
    if [[ $caps == all || ,$caps, == *,compute,* ]]; then
      mounts+=" + [{\"destination\":\"$lib/libcuda.so.1\",\"type\":\"bind\",\"source\":\$cuda,\"options\":[\"rbind\",\"ro\",\"nosuid\",\"nodev\"]}]"
    fi
    jq --arg dir "$GPUSHARE_FAKE_GPU_DIR" --arg nvml "$GPUSHARE_FAKE_NVML" \
      --arg cuda "$GPUSHARE_FAKE_CUDA" --arg uuids "$list" --arg memory "$GPUSHARE_GPU_MEMORY" \
      ".mounts += ($mounts) | .process.env += [
        \"FAKE_GPU_FILE=/dev/fake-gpu/gpu\", \"FAKE_GPU_KERNEL=/dev/fake-gpu/kernel.sock\",
        \"FAKE_CUDA_UUIDS=\" + \$uuids, \"FAKE_NVML_UUIDS=\" + \$uuids,
        \"FAKE_CUDA_MEMORY=\" + \$memory]" "$config" >"$config.gpu"
    mv "$config.gpu" "$config"
    echo "$(date -u +%FT%TZ) create ${args[-1]} NVIDIA_VISIBLE_DEVICES=$visible capabilities=$caps GPUs=$list" \
      >>"${GPUSHARE_RUNTIME_LOG:-/dev/null}"
  fi
fi
exec "$GPUSHARE_RUNC" "$@"
