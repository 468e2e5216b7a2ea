//go:build !cgo

package emu

import (
	"errors"
	"unsafe"
)

// Kernel is one kernel the emulator can run.
type Kernel struct {
	Name   string
	Params string
}

// Kernels lists nothing without cgo.
func Kernels() []Kernel { return nil }

// Device is unavailable without cgo.
type Device struct{}

var errNoCgo = errors.New("emu: the CUDA launch emulator needs cgo (a C/C++ compiler); built with CGO_ENABLED=0")

// New fails without cgo.
func New() (*Device, error) { return nil, errNoCgo }

func (*Device) Name() string                                  { return "unavailable" }
func (*Device) Alloc(int) (uint64, error)                     { return 0, errNoCgo }
func (*Device) Free(uint64) error                             { return errNoCgo }
func (*Device) CopyIn(uint64, unsafe.Pointer, int) error      { return errNoCgo }
func (*Device) CopyOut(unsafe.Pointer, uint64, int) error     { return errNoCgo }
func (*Device) Copy(uint64, uint64, int) error                { return errNoCgo }
func (*Device) Zero(uint64, int) error                        { return errNoCgo }
func (*Device) Launch(string, [3]int, [3]int, []uint64) error { return errNoCgo }
func (*Device) Sync() error                                   { return nil }
func (*Device) Close() error                                  { return nil }
