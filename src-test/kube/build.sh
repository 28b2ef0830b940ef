#!/usr/bin/env bash
# Builds the tests' Kubernetes control plane and real node from published Go modules and prints the
# folder that holds the control plane's binaries: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, and with --with-kwok also kwok. The node's binaries (kubelet,
# containerd, containerd-shim-runc-v2, ctr, runc, crictl and the CNI plugins bridge, host-local
# and loopback under cni/) go into a folder of their own, printed with --node.
#
#   bash src-test/kube/build.sh               # build (or reuse) both, print the control plane's bin
#   bash src-test/kube/build.sh --check       # print the control plane's bin if complete, else exit 3
#   bash src-test/kube/build.sh --node        # build (or reuse) both, print the node's bin folder
#   bash src-test/kube/build.sh --node --check  # print the node's bin if complete, else exit 3 or 5
#   bash src-test/kube/build.sh --with-kwok   # also kwok, which only the scale benchmark runs
#
# Beside bin/ it leaves crds/: the CustomResourceDefinitions of cert-manager and the Prometheus
# Operator, copied from their Go modules (see fetch_crds below).
#
# The binaries are cached outside target/, under $GPUSHARE_KUBE_CACHE (default
# ~/.cache/gpushare-kube), in a folder named after the versions and a hash of the three modules'
# go.mod and go.sum, so a rerun costs seconds and a change of any pin builds afresh.
# The first build takes about 15 minutes on 2 cores for the control plane and about 8 more for the
# node (see README.md beside this script). runc needs cgo, gcc and Debian's libseccomp-dev; without
# them the rest is built, the missing package is named on stderr, and --node exits 5.
# Exit status: 0 built or reused, 2 no Go, 3 (--check) not built yet, 5 (--node) a Debian package
# the node needs is missing, 64 a bad argument, other: the build failed.
set -euo pipefail

# The whole script is one function, read before it runs, and the last line calls it and exits in
# one line: editing this file while a build runs cannot change what that build does.
main() {
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  KUBE_VERSION=v1.37.2
  ETCD_VERSION=v3.7.3
  KWOK_VERSION=v0.8.0
  CONTAINERD_VERSION=v2.4.2
  RUNC_VERSION=v1.5.3
  CNI_PLUGINS_VERSION=v1.10.0
  CRI_TOOLS_VERSION=v1.37.0
  # The CRDs of what deploy/ uses beside Kubernetes, so that the real API server validates those
  # objects too: cert-manager (Issuer, Certificate) and the Prometheus Operator (PodMonitor,
  # PrometheusRule), taken from their Go modules' published CRD files.
  CERT_MANAGER_VERSION=v1.21.2
  PROMETHEUS_OPERATOR_VERSION=v0.85.0

  key="$(cat "$here"/{etcd,kubernetes,kwok}/go.{mod,sum} | sha256sum | cut -c1-12)"
  cache="${GPUSHARE_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpushare-kube}"
  bin="$cache/kubernetes-$KUBE_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION-$key/bin"
  binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)
  node_key="$(cat "$here"/{kubelet,containerd,runc,cni-plugins,cri-tools}/go.{mod,sum} | sha256sum | cut -c1-12)"
  node_bin="$cache/node-kubelet-$KUBE_VERSION-containerd-$CONTAINERD_VERSION-runc-$RUNC_VERSION"
  node_bin+="-cni-$CNI_PLUGINS_VERSION-$node_key/bin"
  node_binaries=(kubelet containerd containerd-shim-runc-v2 ctr runc crictl cni/bridge
    cni/host-local cni/loopback)
  check=0 kwok=0 node=0
  for arg in "$@"; do
    case "$arg" in
      --check) check=1 ;;
      --with-kwok) kwok=1 ;;
      --node) node=1 ;;
      *) echo "build.sh: unknown argument '$arg' (accepted: --check, --node, --with-kwok)" >&2; exit 64 ;;
    esac
  done
  [[ $kwok == 1 ]] && binaries+=(kwok)

  crds="$cache/crds-cert-manager-$CERT_MANAGER_VERSION-prometheus-operator-$PROMETHEUS_OPERATOR_VERSION"

  complete() {
    local b
    for b in "${binaries[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
    [[ -f "$crds/.complete" ]]
  }

  # Copies the CRD files out of the two modules (downloaded through the Go module proxy, no build).
  fetch_crds() {
    [[ -f "$crds/.complete" ]] && return 0
    local tmp dir
    tmp="$(mktemp -d "$cache/.crds.XXXXXX")"
    dir="$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json \
      "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
    cp "$dir"/deploy/crds/cert-manager.io_*.yaml "$tmp/"
    dir="$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json \
      "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" |
      sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
    cp "$dir"/example/prometheus-operator-crd/monitoring.coreos.com_{podmonitors,prometheusrules}.yaml "$tmp/"
    chmod 0644 "$tmp"/*.yaml
    touch "$tmp/.complete"
    rm -rf "$crds"
    mv "$tmp" "$crds"
  }

  node_complete() {
    local b
    for b in "${node_binaries[@]}"; do [[ -x "$node_bin/$b" ]] || return 1; done
  }

  # What the node's build needs beyond Go: runc is the one cgo binary (seccomp, for the pods'
  # seccompProfile RuntimeDefault). Prints the missing Debian packages, if any.
  node_missing() {
    local missing=()
    command -v gcc >/dev/null 2>&1 || missing+=(gcc)
    [[ -f /usr/include/seccomp.h ]] || missing+=(libseccomp-dev)
    echo "${missing[*]}"
  }

  # The answer: the folder asked for, or why not.
  answer() {
    if [[ $node == 0 ]]; then
      echo "$bin"
      exit 0
    fi
    if node_complete; then
      echo "$node_bin"
      exit 0
    fi
    local missing
    missing="$(node_missing)"
    if [[ -n $missing ]] && [[ ! -x "$node_bin/runc" ]]; then
      echo "build.sh: the real node's runc is built with cgo and libseccomp; missing Debian" \
        "package(s): $missing (apt-get install $missing; .ci/run installs them)" >&2
      exit 5
    fi
    echo "build.sh: the real node is not built yet under $node_bin; run: bash src-test/kube/build.sh" >&2
    exit 3
  }

  if [[ $check == 1 ]] || { complete && node_complete; }; then
    if [[ $node == 0 ]] && ! complete; then
      if ! command -v go >/dev/null 2>&1; then
        echo "build.sh: no 'go' on PATH; the control plane is built from Go modules and needs Go 1.26" >&2
        exit 2
      fi
      echo "build.sh: the control plane is not built yet under $bin; run: bash src-test/kube/build.sh" >&2
      exit 3
    fi
    if [[ $node == 1 ]] && ! node_complete && ! command -v go >/dev/null 2>&1; then
      echo "build.sh: no 'go' on PATH; the real node is built from Go modules and needs Go 1.26" >&2
      exit 2
    fi
    answer
  fi
  if ! command -v go >/dev/null 2>&1; then
    echo "build.sh: no 'go' on PATH; the control plane and the real node are built from Go modules" \
      "and need Go 1.26" >&2
    exit 2
  fi

  mkdir -p "$cache"
  export GOFLAGS="-buildvcs=false -mod=readonly" GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
  date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  major="${KUBE_VERSION#v}"; major="${major%%.*}"
  minor="${KUBE_VERSION#v*.}"; minor="${minor%%.*}"
  kube_ldflags=""
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    kube_ldflags+=" -X '$pkg.gitVersion=$KUBE_VERSION' -X '$pkg.gitMajor=$major' -X '$pkg.gitMinor=$minor'"
    kube_ldflags+=" -X '$pkg.gitTreeState=clean' -X '$pkg.buildDate=$date'"
  done
  # Each binary is built into a scratch folder and moved into bin/ when it is whole, so that an
  # interrupted build leaves nothing half-written and a rerun builds only what is missing.
  work="$(mktemp -d "$cache/.build.XXXXXX")"
  trap 'rm -rf "$work"' EXIT

  # One build at a time per cache (the control plane and the node each hold a lock of their own):
  # a second caller waits for the first and then reuses its output.
  build_plane() {
    complete && return 0
    (
      exec 9>"$cache/.lock"
      flock 9
      fetch_crds
      complete && exit 0
      mkdir -p "$bin"
      export CGO_ENABLED=0
      started=$SECONDS
      echo "build.sh: building the control plane into $bin (the first build takes about 15 minutes)" >&2
      missing=()
      for b in "${binaries[@]}"; do [[ -x "$bin/$b" ]] || missing+=("$b"); done
      for b in "${missing[@]}"; do
        echo "build.sh: building $b" >&2
        case "$b" in
          etcd)
            (cd "$here/etcd" && go build -trimpath -ldflags "-s -w" -o "$work/etcd" go.etcd.io/etcd/server/v3) ;;
          kwok)
            (cd "$here/kwok" && go build -trimpath -ldflags "-s -w" -o "$work/kwok" sigs.k8s.io/kwok/cmd/kwok) ;;
          *)
            (cd "$here/kubernetes" && go build -trimpath -ldflags "-s -w $kube_ldflags" -o "$work/$b" \
              "k8s.io/kubernetes/cmd/$b") ;;
        esac
        mv "$work/$b" "$bin/$b"
      done
      echo "build.sh: control plane built in $((SECONDS - started)) s" >&2
    )
  }

  build_node() {
    node_complete && return 0
    (
      exec 9>"$cache/.node.lock"
      flock 9
      node_complete && exit 0
      mkdir -p "$node_bin/cni"
      started=$SECONDS
      echo "build.sh: building the real node into $node_bin (the first build takes about 8 minutes)" >&2
      containerd_ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION"
      for b in "${node_binaries[@]}"; do
        [[ -x "$node_bin/$b" ]] && continue
        if [[ $b == runc ]] && [[ -n "$(node_missing)" ]]; then
          echo "build.sh: runc NOT built: it needs cgo and libseccomp; missing Debian package(s):" \
            "$(node_missing) (apt-get install $(node_missing)). The real-node tests will be skipped." >&2
          continue
        fi
        echo "build.sh: building $b ($((SECONDS - started)) s so far)" >&2
        out="$work/${b##*/}"
        case "$b" in
          kubelet)
            (cd "$here/kubelet" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $kube_ldflags" \
              -o "$out" k8s.io/kubernetes/cmd/kubelet) ;;
          containerd | containerd-shim-runc-v2 | ctr)
            (cd "$here/containerd" && CGO_ENABLED=0 go build -trimpath -ldflags "$containerd_ldflags" \
              -o "$out" "github.com/containerd/containerd/v2/cmd/$b") ;;
          runc)
            # cgo (nsexec) and libseccomp: the seccomp filters of seccompProfile RuntimeDefault.
            (cd "$here/runc" && CGO_ENABLED=1 go build -trimpath -tags seccomp \
              -ldflags "-s -w -X main.version=${RUNC_VERSION#v}" -o "$out" github.com/opencontainers/runc) ;;
          crictl)
            (cd "$here/cri-tools" && CGO_ENABLED=0 go build -trimpath \
              -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRI_TOOLS_VERSION" \
              -o "$out" sigs.k8s.io/cri-tools/cmd/crictl) ;;
          cni/*)
            pkg=main
            [[ $b == cni/host-local ]] && pkg=ipam
            (cd "$here/cni-plugins" && CGO_ENABLED=0 go build -trimpath \
              -ldflags "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$CNI_PLUGINS_VERSION" \
              -o "$out" "github.com/containernetworking/plugins/plugins/$pkg/${b#cni/}") ;;
        esac
        mv "$out" "$node_bin/$b"
      done
      echo "build.sh: real node built in $((SECONDS - started)) s" >&2
    )
  }

  # What is asked for first; then the other.
  if [[ $node == 1 ]]; then
    build_node
    build_plane
  else
    build_plane
    build_node
  fi
  answer
}

main "$@"; exit
