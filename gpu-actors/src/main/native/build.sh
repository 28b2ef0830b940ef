#!/usr/bin/env bash
# Builds libgpushare.so, the pod side of gpushare (gpushare.h), from every *.c beside this script.
# The Maven build runs it at `compile` (gpu-actors/pom.xml); it can be run by hand too:
#
#   gpu-actors/src/main/native/build.sh                  # gpu-actors/target/native/libgpushare.so
#   gpu-actors/src/main/native/build.sh --sanitize       # gpu-actors/target/native-asan/, ASan+UBSan
#   gpu-actors/src/main/native/build.sh --copy-to DIR    # also copies the library into DIR
#   gpu-actors/src/main/native/build.sh --force          # even when the library is up to date
#   gpu-actors/src/main/native/build.sh --print-cflags [--sanitize]
#                                                       # the compile flags, one line (the tests
#                                                       # build their programs with them)
#
# CC picks the compiler (default cc, else gcc or clang). Without one it says so in one line and
# succeeds, so that a machine without gcc still builds the Java side. The library must need nothing
# beyond libc, libdl and libpthread (it goes into every process of a pod): checked with readelf
# when present.
set -euo pipefail
shopt -s nullglob

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="$(cd "$here/../../.." && pwd)"

sanitize=0 force=0 print_cflags=0 copy_to=""
while (($#)); do
  case "$1" in
    --sanitize) sanitize=1 ;;
    --force) force=1 ;;
    --print-cflags) print_cflags=1 ;;
    --copy-to) copy_to="${2:?--copy-to needs a folder}"; shift ;;
    *) echo "build.sh: unknown argument $1 (accepted: --sanitize --force --print-cflags --copy-to DIR)" >&2
       exit 2 ;;
  esac
  shift
done

cflags=(-std=c17 -g -Wall -Wextra -Werror -D_GNU_SOURCE)
if ((sanitize)); then
  # -fno-sanitize-recover: a UBSan finding ends the process, so a test cannot pass over it.
  cflags+=(-O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  out="$module/target/native-asan"
else
  cflags+=(-O2)
  out="$module/target/native"
fi
# Only the GS_EXPORT symbols leave the library; -z now binds its few libc symbols at load time so
# that nothing resolves lazily inside a signal handler or a wrapper on the hot path.
libflags=(-fPIC -fvisibility=hidden -shared -Wl,-soname,libgpushare.so -Wl,--no-undefined
  -Wl,-z,now -Wl,-z,relro)
libs=(-ldl -lpthread)

if ((print_cflags)); then
  echo "${cflags[*]}"
  exit 0
fi

cc="${CC:-}"
if [[ -z $cc ]]; then
  for c in cc gcc clang; do
    if command -v "$c" >/dev/null 2>&1; then cc="$c"; break; fi
  done
fi
if [[ -z $cc ]] || ! command -v "${cc%% *}" >/dev/null 2>&1; then
  echo "[gpushare] libgpushare.so skipped: no C compiler (set CC or install gcc)"
  exit 0
fi

sources=("$here"/*.c)
if ((${#sources[@]} == 0)); then
  echo "build.sh: no C sources in $here" >&2
  exit 1
fi
lib="$out/libgpushare.so"

up_to_date() {
  [[ -f $lib ]] || return 1
  local f
  for f in "${sources[@]}" "$here"/*.h "${BASH_SOURCE[0]}"; do
    [[ $f -nt $lib ]] && return 1
  done
  return 0
}

if ((force)) || ! up_to_date; then
  mkdir -p "$out"
  # Built beside and renamed, so that a failed build never leaves a library that looks current.
  tmp="$(mktemp "$out/.libgpushare.XXXXXX")"
  trap 'rm -f "$tmp"' EXIT
  # shellcheck disable=SC2086 # CC may carry flags of its own ("gcc -m64")
  $cc "${cflags[@]}" "${libflags[@]}" -I"$here" -o "$tmp" "${sources[@]}" "${libs[@]}"

  if command -v readelf >/dev/null 2>&1; then
    allowed='libc\.so\.6|libdl\.so\.2|libpthread\.so\.0|ld-linux[-a-z0-9_.]*\.so\.[0-9]+'
    if ((sanitize)); then # the sanitizers' runtimes (the tests preload libasan)
      allowed+='|libasan\.so\.[0-9]+|libubsan\.so\.[0-9]+|libstdc\+\+\.so\.[0-9]+|libm\.so\.6'
      allowed+='|libgcc_s\.so\.1'
    fi
    allowed="^($allowed)\$"
    needed="$(readelf -d "$tmp" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')"
    extra="$(grep -Ev "$allowed" <<<"$needed" || true)"
    if [[ -n $extra ]]; then
      echo "build.sh: libgpushare.so needs $(echo $extra) beyond libc, libdl and libpthread" >&2
      exit 1
    fi
  fi
  chmod 755 "$tmp"
  mv -f "$tmp" "$lib"
  trap - EXIT
fi

if [[ -n $copy_to ]]; then
  mkdir -p "$copy_to"
  if [[ ! -f $copy_to/libgpushare.so || $lib -nt $copy_to/libgpushare.so ]]; then
    cp -p "$lib" "$copy_to/libgpushare.so"
  fi
fi
