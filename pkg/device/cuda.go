//go:build cuda

package device

import "github.com/rocone/rocone/pkg/gpu"

func init() {
	openCUDA = func() (*gpu.Device, error) { return gpu.Open(0) }
}
