//go:build cuda

// Package cuinit calls cuInit before gorgonia.org/cu does, to explain a failure.
//
// gorgonia.org/cu v0.9.6 calls cuInit in its package initialiser and ends the process
// (os.Exit(1)) when it fails, i.e. on any machine without a working NVIDIA driver and
// GPU; no Go error can reach the caller. Go initialises packages in import-path order
// among those whose imports are ready, and this package imports only what cu imports
// too, so it runs first ("github.com/rocone/…" < "gorgonia.org/cu") and prints a
// diagnosis of the failure before cu exits. It cannot prevent the exit.
package cuinit

/*
#cgo linux CFLAGS: -I/usr/local/cuda/include
#cgo linux LDFLAGS: -L/usr/local/cuda/lib64 -L/usr/local/cuda/lib64/stubs -lcuda
#include <cuda.h>

static const char* errName(CUresult r) {
	const char* s = 0;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS || !s) return "unknown error";
	return s;
}
static const char* errString(CUresult r) {
	const char* s = 0;
	if (cuGetErrorString(r, &s) != CUDA_SUCCESS || !s) return "";
	return s;
}
*/
import "C"

import (
	"fmt"
	"os"
)

// Err is cuInit's failure, or nil. When it is not nil the process is about to end
// (gorgonia.org/cu's initialiser exits).
var Err error

func init() {
	r := C.cuInit(0)
	if r == C.CUDA_SUCCESS {
		return
	}
	Err = fmt.Errorf("cuInit: %s (%d): %s", C.GoString(C.errName(r)), int(r), C.GoString(C.errString(r)))
	fmt.Fprintf(os.Stderr, "rocone: cannot start the CUDA backend: %v.\n"+
		"This binary was built with -tags cuda, and gorgonia.org/cu ends the process when the CUDA driver\n"+
		"cannot initialise (no NVIDIA GPU, no driver, or CUDA_VISIBLE_DEVICES hides every device).\n"+
		"Check nvidia-smi, or build without -tags cuda to run on the CPU.\n", Err)
}
