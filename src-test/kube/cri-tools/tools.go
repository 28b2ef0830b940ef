//go:build tools

// Package critools pins crictl, which the tests' real node uses to stop and remove every pod
// sandbox through the CRI before containerd stops (the kubelet's own clean-up path).
package critools

import _ "sigs.k8s.io/cri-tools/cmd/crictl"
