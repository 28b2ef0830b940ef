//go:build tools

// Package runc pins the OCI runtime of the tests' real node (built with cgo and libseccomp).
package runc

import _ "github.com/opencontainers/runc"
