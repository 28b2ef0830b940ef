//go:build tools

// Package kwok pins the kwok the scale benchmark runs to keep fake nodes and pods alive.
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"
