//go:build tools

// Package kubelet pins the kubelet of the tests' real node: the same k8s.io/kubernetes module and
// version as the control plane (../kubernetes), in a module of its own so that the control plane's
// pins, and the cache of its binaries, do not change with the kubelet's extra dependencies.
package kubelet

import _ "k8s.io/kubernetes/cmd/kubelet"
