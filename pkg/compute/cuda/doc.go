// Package cuda is the GPU backend of package compute, and the device-resident building
// blocks of a GPU training loop.
//
// Layout:
//
//	kernels/   the CUDA C kernels (*.cu), their committed PTX for compute_80, go:generate
//	emu/       a CPU launch emulator that compiles the same .cu files (tests, no GPU)
//	*.go       the host side: Driver, Device, buffers, launch wrappers, Backend
//
// The host code talks to a Driver: the real one (gorgonia.org/cu's driver API; only with
// the `cuda` build tag, see Open) or the emulator (emu.New, for tests). Everything above
// the Driver (argument packing and checking, grid computation, the multi-kernel
// operations, Backend's copies) is the same code on both, so the emulator tests cover it.
//
// Backend implements compute.Backend (float32) on the device, copying its inputs in and
// its outputs out on every call: a first cut that makes the GPU usable behind the
// existing seam. The speed-up that matters comes from keeping the parameters, the Adam
// moments and the activations on the device across a whole training step: the Device
// methods (AngleGather, Rotate*, Negate*, Intersect*, Linear*, Distance*, Loss*, Logit*,
// UnionMax*, AdamStep, ...) are those building blocks, operating on device buffers
// without any host round trip. Adopting them in the training loop is the next step.
//
// Building with the GPU backend:
//
//	go build -tags cuda ./...
//
// needs cgo, cuda.h and a libcuda.so to link against: on Debian bookworm the
// nvidia-cuda-dev package (scripts/cuda/install-deps.sh). At run time only the driver's
// libcuda.so.1 is needed; the PTX is JIT-compiled by the driver for the GPU at hand.
// Caveat of gorgonia.org/cu v0.9.6: its package initialiser calls cuInit and ENDS THE
// PROCESS when that fails (no driver, no GPU), before any of our code can return an
// error; package cuda/internal/cuinit runs first and prints a clear diagnosis. So a
// binary built with -tags cuda needs a usable GPU to start; build without the tag
// elsewhere (Open then returns ErrNotBuilt).
package cuda
