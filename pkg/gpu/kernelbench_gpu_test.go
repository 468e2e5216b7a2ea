//go:build cuda

package gpu

import "testing"

// benchDevice is GPU 0 at the paper's size (go test -tags cuda -bench Kernels).
func benchDevice(b *testing.B) (*Device, benchSize) { return gpuDevice(b), paperSize }
