#!/usr/bin/env bash
# Builds the GPU check bundle on a development machine (no GPU needed): gpu-actors and its NVML
# backend, JavaCPP and only the part of the CUDA presets that NVML needs (libjninvml.so, not the
# 7 MB platform jar of every CUDA library's wrapper), and a minimal Java runtime made by jlink.
# The bundle runs on a GPU machine with no Java and no CUDA runtime: see README.md and run.sh.
#
#   gpu-actors/gpu-check/build.sh            # bundle in gpu-actors/target/gpu-check/
#   MVN_FLAGS=-o gpu-actors/gpu-check/build.sh
#
# Needs a JDK 17 (jar, jlink) and Maven.
set -euo pipefail
shopt -s extglob nullglob

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="$(dirname "$here")"
root="$(dirname "$module")"
out="$module/target/gpu-check"
bundle="$out/bundle"
work="$out/work"
mvn_flags=(-B -q ${MVN_FLAGS:-})

echo "== building gpu-actors (and what it depends on)"
(cd "$root" && mvn "${mvn_flags[@]}" -pl gpu-actors -am install -DskipTests)

rm -rf "$out"
mkdir -p "$bundle/lib" "$work/deps"

echo "== copying the JavaCPP jars"
(cd "$root" && mvn "${mvn_flags[@]}" -pl gpu-actors \
  org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
  -DincludeGroupIds=org.bytedeco -DincludeScope=runtime -DoutputDirectory="$work/deps")

jar_of() { # the one jar in $work/deps matching a glob
  local matches=("$work"/deps/$1)
  [[ ${#matches[@]} -eq 1 && -f ${matches[0]} ]] || { echo "expected one $1, got: ${matches[*]}" >&2; exit 1; }
  echo "${matches[0]}"
}
javacpp_jar="$(jar_of 'javacpp-+([0-9.]).jar')"
javacpp_native="$(jar_of 'javacpp-*-linux-x86_64.jar')"
cuda_jar="$(jar_of 'cuda-+([0-9.-]).jar')"
cuda_native="$(jar_of 'cuda-*-linux-x86_64.jar')"

# JavaCPP itself, whole: its classes and libjnijavacpp.so.
cp "$javacpp_jar" "$bundle/lib/javacpp.jar"
cp "$javacpp_native" "$bundle/lib/javacpp-linux-x86_64.jar"

# The CUDA presets, trimmed to NVML. The same selection as the shade filter proposed in
# README.md: the NVML classes (and the two presets classes whose annotations they read), and of
# the JNI wrappers only libjninvml.so (libjnicudart.so would need the CUDA 12 runtime).
echo "== trimming the CUDA presets to NVML"
mkdir -p "$work/cuda" "$work/cuda-native"
(cd "$work/cuda" && jar xf "$cuda_jar" \
  org/bytedeco/cuda/nvml org/bytedeco/cuda/global/nvml.class \
  org/bytedeco/cuda/presets/nvml.class org/bytedeco/cuda/presets/cudart.class META-INF/maven)
(cd "$work/cuda-native" && jar xf "$cuda_native" \
  org/bytedeco/cuda/linux-x86_64/libjninvml.so META-INF/maven)
test -f "$work/cuda/org/bytedeco/cuda/global/nvml.class"
test -f "$work/cuda-native/org/bytedeco/cuda/linux-x86_64/libjninvml.so"
jar --create --file "$bundle/lib/$(basename "$cuda_jar" .jar)-nvml.jar" -C "$work/cuda" .
jar --create --file "$bundle/lib/$(basename "$cuda_native" .jar)-nvml.jar" -C "$work/cuda-native" .

# gpushare: gpu-actors (GpuCheck, the backends) and arbiter (for JsonSerializable, which
# GpuDevice implements). GpuCheck loads nothing else of them (no Pekko).
cp "$module"/target/gpu-actors-*.jar "$bundle/lib/gpu-actors.jar"
cp "$root"/arbiter/target/arbiter-*.jar "$bundle/lib/arbiter.jar"

echo "== making the Java runtime (jlink)"
jlink --add-modules java.base,java.logging,jdk.unsupported \
  --strip-debug --no-man-pages --no-header-files --compress=2 \
  --output "$bundle/runtime"

cp "$here/run.sh" "$here/README.md" "$bundle/"
mkdir -p "$bundle/fake-nvml"
cp "$here/fake-nvml/fake_nvml.c" "$bundle/fake-nvml/"
chmod +x "$bundle/run.sh"

tar -C "$out" -czf "$out/gpu-check.tar.gz" --transform 's,^bundle,gpu-check,' bundle
rm -rf "$work"

echo "== bundle: $bundle"
(cd "$bundle" && du -sh runtime lib/* | sed 's/^/   /')
echo "   total $(du -sh "$bundle" | cut -f1) ($(du -sb "$bundle" | cut -f1) bytes);" \
  "archive $out/gpu-check.tar.gz $(du -h "$out/gpu-check.tar.gz" | cut -f1)"
total=$(du -sb "$bundle" | cut -f1)
if (( total >= 40 * 1024 * 1024 )); then
  echo "the bundle is over 40 MB" >&2
  exit 1
fi
