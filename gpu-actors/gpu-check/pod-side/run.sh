#!/usr/bin/env bash
# The pod-side GPU check: a real CUDA program (check.cu) under libgpushare.so, against the real
# driver, runtime and nvidia-smi, with standin.py in the place of the node's data plane (the GPU
# machine has no Java, so no member: run.sh scripts the pod's state itself). Eight steps, each
# ending in one line "OK ..." or "FAIL ..." with the evidence:
#   1 grant    the first CUDA call waits while the pod is Ready, goes on once it is Running
#   2 view     nvidia-smi as a child of the program: one GPU, the pod's own utilisation relative to
#              the core limit (its processes by the host PIDs the stand-in, as the member, names)
#   3 memory   cudaMalloc over the pod's memory limit fails; cudaMemGetInfo shows the share, less
#              the context's own memory (counted for the pod)
#   4 wake     checkpointed while idle (cuCheckpointProcess*), the next kernel raises demand,
#              waits, and goes on with its memory intact once restored
#   5 compute  a second program at core limit 30 on a node without MPS (computeLimit.mode
#              library) launches 1 ms kernels back to back for 8 s: the utilisation nvidia-smi
#              shows on the host (outside the library) stays near 30 % once settled
#   6 graphs   the same with CUDA graphs of four 1 ms kernels (cudaGraphLaunch: what vLLM's decode
#              and torch.compile launch)
#   7 entry    what the driver answers cuGetProcAddress with for a few names (how many are internal
#              entry points, not its exported symbols), and that under the library every answer is
#              the library's wrapper (entry_points.h)
#   8 pid 1    the program as PID 1 of its own PID namespace (unshare, as a container's command)
#              holding GPU memory, preempted: the library ends it (status 138, 128 + SIGUSR1,
#              which the kernel ignores at PID 1) and nvidia-smi no longer lists it
# Run from the repository root; needs the NVIDIA driver, nvcc (PATH or /usr/local/cuda/bin),
# python3 and cc. No Maven, no Java. Everything goes under a temp dir (KEEP=1 keeps it).
#
#   bash gpu-actors/gpu-check/pod-side/run.sh               # on a GPU machine
#   GPU=0 bash gpu-actors/gpu-check/pod-side/run.sh         # that GPU (default: the last listed)
#   bash gpu-actors/gpu-check/pod-side/run.sh --rehearse    # anywhere: the fake libcuda and NVML,
#                                                           # workload.c in check.cu's place
#   LIBGPUSHARE=path/libgpushare.so bash ...run.sh         # that library instead of building one
# Exit status: 0 all steps OK (or skipped), 1 a step failed, 2 something to run it with is missing,
# 3 the whole check ran over 170 s (stopped).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
here="$root/gpu-actors/gpu-check/pod-side"
rehearse=0
[[ ${1:-} == --rehearse ]] && rehearse=1
T="$(mktemp -d "${TMPDIR:-/tmp}/pod-side.XXXXXX")"
POD=gpu-check/pod-side LIMIT_CORE=50 LIMIT_MEMORY=25
failed=0 jobs_=()
ok() { echo "OK   $*"; }
fail() { echo "FAIL $*"; failed=1; }
cleanup() {
  for p in "${jobs_[@]}"; do kill "$p" 2>/dev/null; done
  if [[ -n ${KEEP:-} ]]; then echo "kept: $T"; else rm -rf "$T"; fi
}
transcript() {
  [[ -f $T/out ]] || return
  echo "--- the program's stdout"; sed 's/^/  /' "$T/out"
  echo "--- its stderr"; sed 's/^/  /' "$T/err"
}
trap cleanup EXIT
trap 'transcript; exit 3' TERM INT
(trap 'kill $s; exit' TERM; sleep 170 & s=$!; wait $s; echo "FAIL the check ran over 170 s"; kill -TERM $$) &
jobs_+=($!)

# await FILE REGEX SECONDS: prints FILE's first line matching REGEX once there is one; 1 if none came
await() {
  local end=$((SECONDS + $3 + 1))
  until grep -Eq "$2" "$1" 2>/dev/null; do ((SECONDS < end)) || return 1; sleep 0.1; done
  grep -Em1 "$2" "$1"
}
need() { command -v "$1" >/dev/null || { echo "FAIL $1 not found: $2"; exit 2; }; }
need python3 "install python3"
if [[ -n ${LIBGPUSHARE:-} ]]; then
  cp "$LIBGPUSHARE" "$T/libgpushare.so" || exit 2
else
  bash "$root/gpu-actors/src/main/native/build.sh" --copy-to "$T" >/dev/null
fi
[[ -f $T/libgpushare.so ]] || { echo "FAIL libgpushare.so did not build (cc and libc headers?)"; exit 2; }

if ((rehearse)); then
  echo "REHEARSAL: fake libcuda.so.1 and libnvidia-ml.so.1, workload.c for check.cu; proves the"
  echo "           stand-in, the protocol and the script, not the real driver"
  fake="$root/gpu-actors/gpu-check" native="$root/gpu-actors/src/test/native"
  mkdir -p "$T/lib" "$T/bin"
  gcc -shared -fPIC -O1 -Wl,-soname,libcuda.so.1 -o "$T/lib/libcuda.so.1" \
    "$fake/fake-cuda/fake_cuda.c" "$fake/fake-cuda/fake_cuda_mem.c" &&
    gcc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o "$T/lib/libnvidia-ml.so.1" "$fake/fake-nvml/fake_nvml.c" &&
    gcc -std=c17 -O2 -D_GNU_SOURCE -o "$T/workload" "$native/workload.c" -L"$T/lib" -l:libcuda.so.1 -ldl &&
    gcc -std=c17 -O2 -o "$T/nvml_view" "$native/nvml_view.c" -L"$T/lib" -l:libnvidia-ml.so.1 -ldl &&
    gcc -std=c17 -O2 -D_GNU_SOURCE -o "$T/busy" "$native/busy.c" -L"$T/lib" -l:libcuda.so.1 ||
    { echo "FAIL the fakes did not build"; exit 2; }
  # nvidia-smi as the rehearsal fakes it: nvml_view's lines in the formats run.sh reads
  cat >"$T/bin/nvidia-smi" <<'EOF'
#!/usr/bin/env bash
fields=index,uuid
for a; do [[ $a == --query-gpu=* ]] && fields=${a#--query-gpu=}; done
"$(dirname "$0")/../nvml_view" | awk -v fields="$fields" -v list="$1" '$1 == "gpu" {
  for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  if (list == "-L") { print "GPU " v["index"] ": Fake GPU (UUID: " v["uuid"] ")"; next }
  n = split(fields, f, ","); line = ""
  for (i = 1; i <= n; i++) line = line (i > 1 ? ", " : "") (f[i] == "utilization.gpu" ? v["util"] : \
    f[i] == "memory.total" ? int(v["memtotal"] / 1048576) : f[i] == "memory.used" ? 0 : v[f[i]])
  print line }'
EOF
  chmod +x "$T/bin/nvidia-smi"
  export PATH="$T/bin:$PATH" LD_LIBRARY_PATH="$T/lib" FAKE_NVML_UTIL=1:30:10
  export FAKE_CUDA_MEMORY=$((97871 * 1048576)) FAKE_CUDA_VERSION="${FAKE_CUDA_VERSION:-13000}" # as fake NVML's GPUs
  libcuda="$T/lib/libcuda.so.1" tolerance=0
else
  need nvidia-smi "install the NVIDIA driver"
  nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  [[ -x $nvcc ]] || { echo "FAIL nvcc not found: install the CUDA toolkit"; exit 2; }
  "$nvcc" -O2 -o "$T/check" "$here/check.cu" -ldl || { echo "FAIL nvcc could not build check.cu"; exit 2; }
  echo "driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)," \
    "$("$nvcc" --version | grep -o 'release [0-9.]*')"
  libcuda=libcuda.so.1 tolerance=25 # two nvidia-smi samples of a duty cycle, side by side
fi

# The GPU to grant, as the node names it.
mapfile -t gpus < <(nvidia-smi --query-gpu=index,uuid,memory.total --format=csv,noheader,nounits)
for g in "${gpus[@]}"; do echo "node's GPU: $g"; done
pick="$(printf '%s\n' "${gpus[@]}" | tail -1)"
[[ -n ${GPU:-} ]] && pick="$(printf '%s\n' "${gpus[@]}" | grep -E "^$GPU, " | head -1)"
IFS=', ' read -r IDX UUID MIB <<<"$pick"
[[ -n ${UUID:-} ]] || { echo "FAIL no GPU ${GPU:-} in nvidia-smi's list"; exit 2; }
GPU_BYTES=$((MIB * 1048576))
B30=$((GPU_BYTES * 30 / 100)) B20=$((GPU_BYTES * 20 / 100)) BF=$((${FILL_MIB:-1024} * 1048576))

# The stand-in for the data plane.
python3 "$here/standin.py" serve "$POD" "$T/port" & jobs_+=($!)
for _ in {1..100}; do [[ -s $T/port ]] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$T/port" 2>/dev/null)"
standin() { python3 "$here/standin.py" "$1" "$url" "${@:2}"; }
standin set "{\"limits\":{\"core\":$LIMIT_CORE,\"memory\":$LIMIT_MEMORY}}" ||
  { echo "FAIL the stand-in did not start"; exit 2; }
gpu="{\"index\":$IDX,\"uuid\":\"$UUID\"}"
running="\"state\":\"Running\",\"gpu\":$gpu,\"queuePosition\":null,\"waitingSeconds\":null,\"runningSeconds\":0"
ckpt() { echo "{\"phase\":\"$1\",\"gpu\":$IDX,\"bytes\":$BF,\"since\":\"$(date -u +%FT%TZ)\"}"; }

# The program, with what a sharing pod's process gets; CHECK_SMI is what it runs as its child.
q="--query-gpu=index,uuid,utilization.gpu,memory.used --format=csv,noheader,nounits"
smi="nvidia-smi -L >$T/smi-L 2>&1; nvidia-smi $q >$T/smi-view 2>&1 &
     env -u LD_PRELOAD nvidia-smi $q >$T/smi-abs 2>&1; wait"
penv=(LD_PRELOAD="$T/libgpushare.so" GPUSHARE_SERVER="$url" GPUSHARE_POD="$POD"
  GPUSHARE_WAIT_INTERVAL=1s GPUSHARE_STATE_DIR="$T" CHECK_SMI="$smi")
if ((rehearse)); then
  prog=("$T/workload" init ctx count uuid "alloc:$B30" "alloc:$B20" free meminfo "alloc:$BF" launch
    stdin launch sync)
else
  prog=("$T/check" count uuid busy "alloc:$B30" "alloc:$B20" free meminfo "fill:$BF" stdin verify)
fi
mkfifo "$T/in"
env "${penv[@]}" "${prog[@]}" <"$T/in" >"$T/out" 2>"$T/err" &
pid=$! started=$SECONDS jobs_+=($!)
exec 3>"$T/in"
waiting() { grep -c '^You have been waiting' "$T/err"; }
field() { awk -v n="$2" '{print $n}' <<<"$1"; }

# 1 grant: Ready for 2 s, then Running on the GPU.
if standin await POST 1 20 && w="$(await "$T/err" '^You have been waiting' 5)"; then
  after=$((SECONDS - started))
  sleep 2
  early="$(grep -m1 '^count ->' "$T/out")"
  lines=$(waiting)
  standin set "{$running}"
  c="$(await "$T/out" '^count -> ' 30)" u="$(await "$T/out" '^uuid -> ' 30)"
  if [[ -n $early ]]; then
    fail "1 grant: the first call returned while the pod was Ready: $early"
  elif ((after > 5)); then
    fail "1 grant: the demand came ${after} s after the program started, not at its first call" \
      "(the watch's first event comes with the response's head; the next bytes, a heartbeat, 15 s later)"
  elif [[ $(field "$c" 3) == 0 && $(field "$c" 4) == 1 && $(field "${u,,}" 4) == "${UUID,,}" ]]; then
    ok "1 grant: demand raised at the first call, which waited 2 s while Ready ($lines lines: '$w');" \
      "then Running on GPU $IDX: cudaGetDeviceCount -> 1, device 0 is $(field "$u" 4)"
  else
    fail "1 grant: granted GPU $IDX ($UUID); got '${c:-no count}', '${u:-no uuid}'"
  fi
else
  fail "1 grant: no POST demand and waiting line within 20 s (demands: $(standin count POST)," \
    "stderr: $(tail -3 "$T/err" | tr '\n' ' '))"
  standin set "{$running}"
fi

# 2 view: nvidia-smi inside the process's view and outside, while the GPU is busy. The member
# names the program's host PID as the pod's (no container here: its PID); in the rehearsal the fake
# NVML's scripted sample is that process's too.
standin set "{\"hostPids\":[$pid]}"
if ((rehearse)); then
  FAKE_NVML_PID=$pid env "${penv[@]}" sh -c "$smi"
else
  b="$(await "$T/out" '^busy -> ' 45)" || fail "2 view: the busy step did not end within 45 s"
fi
list="$(cat "$T/smi-L" 2>/dev/null)" view="$(cat "$T/smi-view" 2>/dev/null)"
abs="$(grep -i "$UUID" "$T/smi-abs" 2>/dev/null | head -1)"
IFS=', ' read -r vi vu vutil vmem <<<"$view"
IFS=', ' read -r _ _ autil amem <<<"$abs"
num() { [[ $1 =~ ^[0-9]+$ ]] && echo "$1" || echo -1; }
vutil=$(num "${vutil:-}") autil=$(num "${autil:-}")
expect=$((autil < 0 ? -1 : autil * 100 / LIMIT_CORE > 100 ? 100 : autil * 100 / LIMIT_CORE))
off=$((vutil - expect)) && off=${off#-}
if [[ $(grep -c '^GPU ' <<<"$list") == 1 && $list == "GPU $IDX: "*"UUID: $UUID"* &&
  $(wc -l <<<"$view") == 1 && $vi == "$IDX" && ${vu,,} == "${UUID,,}" && $autil -gt 0 && $vutil -ge 0 &&
  $off -le $tolerance ]]; then
  ok "2 view: nvidia-smi -L in the process: '$list'; utilisation $vutil % in the process" \
    "(limit $LIMIT_CORE %), $autil % outside (expected $expect ± $tolerance); memory.used $vmem / $amem MiB"
else
  fail "2 view: -L: '$list'; in the process: '$view'; outside: '$abs'" \
    "(expected GPU $IDX $UUID alone, utilisation $expect ± $tolerance) ${b:-}"
fi

# 3 memory: limit 25 %: 30 % fails, 20 % fits, cudaMemGetInfo answers the share; with the 20 %
# freed again, what the share has less is the context's own memory, counted for the pod (a real
# driver's context takes a few hundred MiB; the library counts at most 4 GiB; the rehearsal's
# fake context takes none).
a30="$(await "$T/out" "^alloc:$B30 -> " 30)" a20="$(await "$T/out" "^alloc:$B20 -> " 10)"
m="$(await "$T/out" '^meminfo -> ' 10)"
g="$(grep -o 'gpu=[0-9]*' <<<"$m" | cut -d= -f2)"
share=$(( ${g:-$GPU_BYTES} * LIMIT_MEMORY / 100 ))
ctxb=$(( share - $(field "$m" 4) ))
ctx_ok=$(( ctxb >= (rehearse ? 0 : 1) && ctxb <= 4294967296 ))
if [[ $(field "$a30" 3) == 2 && $(field "$a20" 3) == 0 && $(field "$m" 3) == 0 &&
  $(field "$m" 5) == "$share" && $ctx_ok == 1 ]]; then
  ok "3 memory: limit $LIMIT_MEMORY % of ${g:-$GPU_BYTES} bytes: cudaMalloc 30 % -> 2" \
    "(cudaErrorMemoryAllocation), 20 % -> 0; cudaMemGetInfo total $(field "$m" 5) = the share," \
    "the context's $((ctxb / 1048576)) MiB counted"
else
  fail "3 memory: expected 30 % -> 2, 20 % -> 0, total $share, a context of 1 B..4 GiB" \
    "counted (free = share - context); got '$a30', '$a20', '$m'"
fi

# 4 wake: checkpointed while idle, the next kernel raises demand and waits until restored.
f="$(await "$T/out" '^(fill:[0-9]+|launch) -> ' 60)"
coproc CK { python3 "$here/cuda_checkpoint.py" "$libcuda" "$pid" 2>&1; }
jobs_+=($CK_PID)
read -r -t 20 api <&"${CK[0]}" || api="no answer within 20 s"
ck() { # ck suspend|resume: sets answer to "ok MS" or "error ..."
  answer="error the checkpoint helper exited"
  [[ -n ${CK[1]:-} ]] && echo "$1" >&"${CK[1]}" || return
  while IFS= read -r -t 60 answer <&"${CK[0]}"; do
    case $answer in ok* | error*) return ;; *) echo "     ($answer)" ;; esac
  done
  answer="error no answer within 60 s"
}
stuck() { for t in /proc/$pid/task/*; do echo -n "$(cat "$t/comm" "$t/wchan" 2>/dev/null | paste -sd:) "; done; }
if [[ $(field "$f" 3) != 0 ]]; then
  fail "4 wake: the fill did not succeed: '${f:-nothing within 60 s}'"
  echo go >&3
elif [[ $api =~ ^driver\ [0-9]+\ api\ no$ ]]; then
  echo "SKIP 4 wake: no CUDA checkpoint API in this driver ($api): cuCheckpointProcess* needs" \
    "CUDA 12.8's driver API (cuDriverGetVersion >= 12080)"
  echo go >&3
elif [[ $api != *"api yes" ]]; then
  fail "4 wake: the checkpoint helper could not start: $api"
  echo go >&3
else
  standin set "{\"checkpoint\":$(ckpt checkpointing)}"
  ck suspend
  suspended="$answer"
  standin set "{\"state\":\"Hibernation\",\"gpu\":null,\"runningSeconds\":null,\"checkpoint\":$(ckpt held)}"
  held="$(await "$T/err" 'left Running \(now Hibernation\): its GPU state is checkpointed' 10)"
  demands=$(standin count POST) lines=$(waiting)
  echo go >&3
  standin await POST $((demands + 1)) 15 && demand=yes || demand="no (threads: $(stuck))"
  for _ in {1..20}; do (($(waiting) > lines)) && break; sleep 0.1; done
  lines2=$(waiting)
  sleep 1
  early="$(grep -Em1 '^(verify|sync) ->' "$T/out")"
  standin set "{$running,\"checkpoint\":$(ckpt restoring)}"
  ck resume
  resumed="$answer"
  standin set '{"checkpoint":null}'
  back="$(await "$T/err" "is Running again on GPU $IDX " 10)"
  v="$(await "$T/out" '^(verify|sync) -> ' 30)"
  if [[ $suspended == ok* && -n $held && $demand == yes && $lines2 -gt $lines && -z $early &&
    $resumed == ok* && -n $back && $(field "$v" 3) == 0 ]]; then
    ok "4 wake: checkpointed in ${suspended#ok } ms ('${held#gpushare: }'); the next kernel raised" \
      "demand and waited (waiting line); restored in ${resumed#ok } ms ('${back#gpushare: }'); '$v'"
  else
    fail "4 wake: checkpoint: $suspended; held line: '${held:-none}'; demand: $demand;" \
      "waiting lines $lines -> $lines2; returned early: '${early:-no}'; restore: $resumed;" \
      "restored line: '${back:-none}'; after: '${v:-nothing within 30 s}'"
  fi
fi

# The program's exit releases the share.
for _ in {1..100}; do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  fail "exit: the program still runs 10 s after its last step"
else
  wait "$pid"
  rc=$?
  released=$(standin count DELETE)
  if [[ $rc == 0 && $released -ge 1 ]]; then
    ok "exit: status 0, DELETE demand sent (the share released)"
  else
    fail "exit: status $rc, $released DELETE demand"
  fi
fi
# 5 compute and 6 graphs: core limit 30, a program that would take the whole GPU, with kernels (5)
# and with CUDA graphs (6: what vLLM's decode and torch.compile launch); the host's nvidia-smi.
LIMIT5=30 SECS5=8
if ((rehearse)); then
  export FAKE_GPU_FILE="$T/gpu" # the fakes' shared timeline: kernels of 1 ms, NVML over 100 ms
  unset FAKE_NVML_UTIL
  tol5=5
else
  tol5=10 # nvidia-smi's samples of a real GPU
fi
# limited NAME WHAT PROGRAM...: runs PROGRAM at core limit 30 and checks the host's samples.
limited() {
  local name=$1 what=$2 i u5 rc5 mean5 report5 off5 pid5 samples5=()
  shift 2
  standin set "{\"onDemand\":\"none\",$running,\"limits\":{\"core\":$LIMIT5,\"memory\":$LIMIT_MEMORY},\"computeLimit\":{\"mode\":\"library\",\"aimPercent\":$LIMIT5},\"hostPids\":[]}"
  env "${penv[@]}" "$@" </dev/null >"$T/out-$name" 2>"$T/err-$name" &
  pid5=$! jobs_+=($!)
  standin set "{\"hostPids\":[$pid5]}" # the member's host PIDs of the pod: this program now
  for i in $(seq 1 $((SECS5 * 2 - 1))); do
    sleep 0.5
    ((i <= 6)) && continue # the first 3 s: the program starts and the limit settles
    u5="$(env -u LD_PRELOAD nvidia-smi --query-gpu=uuid,utilization.gpu --format=csv,noheader,nounits |
      grep -i "$UUID" | awk -F', *' '{print $2}')"
    [[ $u5 =~ ^[0-9]+$ ]] && samples5+=("$u5")
  done
  wait "$pid5"
  rc5=$?
  mean5="$(printf '%s\n' "${samples5[@]}" | awk '{s += $1; n++} END {if (n) printf "%.0f", s / n; else print -1}')"
  report5="$(standin report)"
  off5=$((mean5 - LIMIT5)) && off5=${off5#-}
  if [[ $rc5 == 0 && ${#samples5[@]} -ge 5 && $off5 -le $tol5 && $report5 == *'"aimPercent": '$LIMIT5* ]]; then
    ok "$name: $what at limit $LIMIT5 %: nvidia-smi on the host shows $mean5 % (samples" \
      "${samples5[*]}, expected $LIMIT5 ± $tol5); the library reported $report5; $(tail -1 "$T/out-$name")"
  else
    fail "$name: $what at limit $LIMIT5 %: status $rc5, host samples '${samples5[*]}' (mean $mean5," \
      "expected $LIMIT5 ± $tol5), report '$report5'; stderr: $(tail -3 "$T/err-$name" | tr '\n' ' ')"
  fi
}
if ((rehearse)); then
  limited "5 compute" "kernels" "$T/busy" --seconds "$SECS5"
  limited "6 graphs" "graphs of 4 kernels" "$T/busy" --seconds "$SECS5" --graph 4
else
  limited "5 compute" "kernels" "$T/check" count "hammer:$SECS5"
  limited "6 graphs" "graphs of 4 kernels" "$T/check" count "graphs:$SECS5"
fi

# 7 entry points: what the driver answers cuGetProcAddress with, without the library (how many
# internal entry points, not the exported symbols), and that with it every answer is its wrapper.
if ((rehearse)); then prog7=("$T/workload" entrypoints); else prog7=("$T/check" entrypoints); fi
raw7="$(env -u LD_PRELOAD "${prog7[@]}" 2>&1 | grep '^entrypoints ->')"
wrapped7="$(env "${penv[@]}" GPUSHARE_DEBUG=1 "${prog7[@]}" 2>"$T/err7" | grep '^entrypoints ->')"
not_lib7="$(tr ' ' '\n' <<<"$wrapped7" | grep '@' | grep -v '=libgpushare\.so:' || true)"
if [[ $(field "$raw7" 3) == 0 && $(field "$wrapped7" 3) == 0 && -n $wrapped7 && -z $not_lib7 ]]; then
  ok "7 entry points: the driver alone: $(field "$raw7" 4) $(field "$raw7" 5) (internal: answers" \
    "that are not the exported symbols); under the library every answer is its wrapper;" \
    "names it let through unwrapped (GPUSHARE_DEBUG): $(grep -c ': not wrapped, its calls go' "$T/err7")"
else
  fail "7 entry points: driver alone '${raw7:-nothing}'; under the library '${wrapped7:-nothing}'" \
    "(not the library's: ${not_lib7:-none})"
fi

# 8 pid 1: the program as PID 1 of its own PID namespace (a container's command), preempted under
# the signal contract: the kernel ignores SIGUSR1 at its default there, so the library ends it
# (exit status 128 + 10) and the GPU memory it held is free.
if ! unshare --pid --fork --user --map-root-user --kill-child true 2>/dev/null; then
  echo "SKIP 8 pid 1: unshare --pid --fork --user --map-root-user is not allowed here" \
    "($(unshare --pid --fork --user --map-root-user true 2>&1 | head -1))"
else
  standin set "{\"onDemand\":\"none\",$running,\"limits\":{\"core\":$LIMIT_CORE,\"memory\":$LIMIT_MEMORY},\"computeLimit\":null,\"hostPids\":[]}"
  if ((rehearse)); then prog8=("$T/workload" init ctx "alloc:$BF" stdin launch); else
    prog8=("$T/check" count "fill:$BF" stdin verify); fi
  mkfifo "$T/in8"
  unshare --pid --fork --user --map-root-user --kill-child \
    env "${penv[@]}" GPUSHARE_GRACE=2s "${prog8[@]}" <"$T/in8" >"$T/out8" 2>"$T/err8" &
  pid8=$! jobs_+=($!)
  exec 4>"$T/in8"
  held8="$(await "$T/out8" '^(alloc|fill):[0-9]+ -> ' 30)"
  child8="$(cat /proc/"$pid8"/task/*/children 2>/dev/null | awk '{print $1; exit}')"
  standin set '{"state":"Ready","gpu":null,"runningSeconds":null,"queuePosition":1,"waitingSeconds":0}'
  told8="$(await "$T/err8" 'sending SIGUSR1' 10)"
  for _ in {1..100}; do kill -0 "$pid8" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid8" 2>/dev/null; then
    rc8="still running 10 s after the preemption"
    kill -9 "$pid8" 2>/dev/null
  else
    wait "$pid8"
    rc8=$?
  fi
  exec 4>&-
  gone8=yes
  if ((!rehearse)) && [[ -n $child8 ]] &&
    nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | grep -qw "$child8"; then
    gone8="no: nvidia-smi still lists pid $child8"
  fi
  if [[ $(field "$held8" 3) == 0 && -n $told8 && $rc8 == 138 && $gone8 == yes ]]; then
    ok "8 pid 1: held $BF bytes as PID 1 (host pid ${child8:-?}), preempted: '${told8#gpushare: }';" \
      "ended with status 138 (128 + SIGUSR1) and no longer on the GPU"
  else
    fail "8 pid 1: '${held8:-no allocation within 30 s}'; told: '${told8:-no SIGUSR1 line}';" \
      "status $rc8 (expected 138); gone from the GPU: $gone8; stderr: $(tail -3 "$T/err8" | tr '\n' ' ')"
  fi
fi

transcript
((failed)) && { echo "pod-side check: FAILED"; exit 1; }
echo "pod-side check: all OK"
