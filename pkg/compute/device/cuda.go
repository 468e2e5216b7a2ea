//go:build cuda

package device

import (
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/compute/cuda"
)

func init() {
	openCUDA = func() (compute.Backend, error) {
		dev, err := cuda.Open(0)
		if err != nil {
			return nil, err
		}
		return cuda.NewBackend(dev), nil
	}
}
