// Package gputest holds the test tools for code that runs on a CUDA device (package
// cuda), so that the test files of the packages above it (gpumodel, train, eval,
// pipeline) share one copy and the production package holds none:
//
//   - [Emulator] and [EmulatorDriver]: a device over package emu's launch emulator (the
//     .cu kernels compiled as C++ through cgo), the GPU code path, host side included,
//     on the CPU. In a build without cgo they fail the test with emu.NoCgoHelp, which
//     says what to install, instead of skipping it.
//   - [NullDriver]: a driver that executes nothing, for measuring the host's share of
//     device work without a GPU (the HostShare benchmarks) and for wrapping in drivers
//     that inject failures.
//
// Package cuda's own tests cannot import it (it imports cuda); they keep their
// emulator helper in emu_test.go.
package gputest
