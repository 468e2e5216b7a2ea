//go:build !amd64

package cpu

func asmGEMM() (gemmKernel, bool)  { return gemmKernel{}, false }
func asmDist() (distKernels, bool) { return distKernels{}, false }
