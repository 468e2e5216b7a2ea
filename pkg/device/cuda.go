//go:build cuda

package device

import "github.com/rocone/rocone/pkg/compute/cuda"

func init() {
	openCUDA = func() (*cuda.Device, error) { return cuda.Open(0) }
}
