#!/usr/bin/env bash
# Builds the tests' Kubernetes control plane from published Go modules and prints the folder that
# holds the binaries: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, and
# with --with-kwok also kwok.
#
#   bash src-test/kube/build.sh               # build (or reuse) and print the bin folder
#   bash src-test/kube/build.sh --check       # print the bin folder if it is complete, else exit 3
#   bash src-test/kube/build.sh --with-kwok   # also kwok, which only the scale benchmark runs
#
# Beside bin/ it leaves crds/: the CustomResourceDefinitions of cert-manager and the Prometheus
# Operator, copied from their Go modules (see fetch_crds below).
#
# The binaries are cached outside target/, under $GPUSHARE_KUBE_CACHE (default
# ~/.cache/gpushare-kube), in a folder named after the versions and a hash of the three modules'
# go.mod and go.sum, so a rerun costs seconds and a change of any pin builds afresh.
# The first build takes about 15 minutes on 2 cores (see README.md beside this script).
# Exit status: 0 built or reused, 2 no Go, 3 (--check) not built yet, 64 a bad argument, other: the
# build failed.
set -euo pipefail

# The whole script is one function, read before it runs, and the last line calls it and exits in
# one line: editing this file while a build runs cannot change what that build does.
main() {
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  KUBE_VERSION=v1.37.2
  ETCD_VERSION=v3.7.3
  KWOK_VERSION=v0.8.0
  # The CRDs of what deploy/ uses beside Kubernetes, so that the real API server validates those
  # objects too: cert-manager (Issuer, Certificate) and the Prometheus Operator (PodMonitor,
  # PrometheusRule), taken from their Go modules' published CRD files.
  CERT_MANAGER_VERSION=v1.21.2
  PROMETHEUS_OPERATOR_VERSION=v0.85.0

  key="$(cat "$here"/{etcd,kubernetes,kwok}/go.{mod,sum} | sha256sum | cut -c1-12)"
  cache="${GPUSHARE_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpushare-kube}"
  bin="$cache/kubernetes-$KUBE_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION-$key/bin"
  binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)
  check=0 kwok=0
  for arg in "$@"; do
    case "$arg" in
      --check) check=1 ;;
      --with-kwok) kwok=1 ;;
      *) echo "build.sh: unknown argument '$arg' (accepted: --check, --with-kwok)" >&2; exit 64 ;;
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

  if complete; then
    echo "$bin"
    exit 0
  fi
  if ! command -v go >/dev/null 2>&1; then
    echo "build.sh: no 'go' on PATH; the control plane is built from Go modules and needs Go 1.26" >&2
    exit 2
  fi

  if [[ $check == 1 ]]; then
    echo "build.sh: the control plane is not built yet under $bin; run: bash src-test/kube/build.sh" >&2
    exit 3
  fi

  mkdir -p "$cache"
  # One build at a time per cache: a second caller waits for the first and then reuses its output.
  exec 9>"$cache/.lock"
  flock 9
  fetch_crds
  if complete; then
    echo "$bin"
    exit 0
  fi

  # Each binary is built into a scratch folder and moved into bin/ when it is whole, so that an
  # interrupted build leaves nothing half-written and a rerun builds only what is missing.
  mkdir -p "$bin"
  work="$(mktemp -d "$cache/.build.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  export CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly" GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
  date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  major="${KUBE_VERSION#v}"; major="${major%%.*}"
  minor="${KUBE_VERSION#v*.}"; minor="${minor%%.*}"
  kube_ldflags=""
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    kube_ldflags+=" -X '$pkg.gitVersion=$KUBE_VERSION' -X '$pkg.gitMajor=$major' -X '$pkg.gitMinor=$minor'"
    kube_ldflags+=" -X '$pkg.gitTreeState=clean' -X '$pkg.buildDate=$date'"
  done

  started=$SECONDS
  echo "build.sh: building the control plane into $bin (the first build takes about 15 minutes)" >&2
  local missing=()
  for b in "${binaries[@]}"; do [[ -x "$bin/$b" ]] || missing+=("$b"); done
  for b in "${missing[@]}"; do
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
  echo "build.sh: built in $((SECONDS - started)) s" >&2
  echo "$bin"
}

main "$@"; exit
