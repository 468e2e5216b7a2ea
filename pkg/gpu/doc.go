// Package gpu runs the RoConE operators on a CUDA device: the kernels, their host
// wrappers on device-resident buffers and the Adam optimiser on the device. Nothing here
// copies a model per call: package gpumodel keeps the model resident and chains these
// operators (training, embedding, ranking).
//
// An operator has one name in every layer, so a reader follows it from its maths to its
// kernel by that name:
//
//	pkg/model/op_X.go          the CPU reference, forward and backward side by side (for
//	                           linear and distance: pkg/compute/X.go, fast in pkg/compute/cpu)
//	kernels/X.cu               the CUDA kernels (compiled to committed PTX; emu/ runs them on the CPU)
//	op_X.go                    Device.XForward / XBackward: argument checks, grids, launches
//	op_X_test.go               the parity test of X against pkg/model (emulator, and GPU with -tags cuda)
//
// for X in angle, rotate, negate, intersect (with its dropout masks), mlp (the ends of
// ConE's projection MLP), linear (the MLP and attention layers: GEMM and ReLU), distance,
// loss (logit, union, the loss) and score (rank's all-entity scores and filtered ranks).
// The rest of the package: buffer.go (typed device buffers and the per-batch arena),
// rows.go (gathers, scatters and the one CSR index, RowCSR, for deterministic gradient
// sums), cones.go, adam.go (every Adam: one tensor, or all in one launch), device.go (the
// Device and its checked launches), driver.go with driver_cuda.go (the gorgonia.org/cu
// driver, -tags cuda) and driver_nocuda.go (Open returns ErrNotBuilt).
//
// The host code talks to a Driver: the real one or package emu's launch emulator (the
// same .cu compiled as C++ through cgo). Everything above the Driver is the same code on
// both, so the emulator tests cover it; package gputest holds the test tools for the
// packages above this one. The device model that chains these operators into a training
// update and a ranking pass, one level-batched plan walk (model.Walk), is package
// gpumodel.
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
// error; package gpu/internal/cuinit runs first and prints a clear diagnosis. So a
// binary built with -tags cuda needs a usable GPU to start; build without the tag
// elsewhere (Open then returns ErrNotBuilt).
package gpu
