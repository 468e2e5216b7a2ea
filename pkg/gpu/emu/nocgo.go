//go:build !cgo

package emu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unsafe"

	"github.com/rocone/rocone/internal/buildtag"
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

// NoCgoHelp says why the emulator tests cannot run in this build and what to install. The
// packages whose tests run the CUDA kernels under the emulator (their files are
// //go:build cgo) each have a !cgo test that fails with it, so that a machine without a
// C++ compiler, where Go turns cgo off, fails the test suite instead of passing it with
// the whole GPU path untested.
const NoCgoHelp = "this test binary was built without cgo (CGO_ENABLED=0; Go turns cgo off when it finds no C compiler), " +
	"so the CUDA kernels' tests, which run them under the launch emulator (package emu: the .cu sources compiled as C++ through cgo), " +
	"are left out and the GPU path would go untested. Install a C/C++ compiler (Debian/Ubuntu: apt-get install g++) " +
	"and run the tests with cgo on (CGO_ENABLED=1, the default once gcc and g++ are on the PATH)"

// NoCgoLeftOut names what a build without cgo leaves out of the tests of the package in
// dir (a test's working directory: "."): each _test.go file that this GOOS/GOARCH's build
// (no cuda tag) compiles only with cgo, with its Test, Benchmark and Fuzz functions, as
// "emu_test.go (TestA, TestB), model_test.go (TestC)". The packages' TestEmulatorNeedsCgo
// prints it before NoCgoHelp, so the list is the files' own, never a stale copy.
func NoCgoLeftOut(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		src := string(b)
		with, err := buildtag.Compiles(src, true)
		if err != nil {
			return "", fmt.Errorf("%s: %w", f, err)
		}
		without, _ := buildtag.Compiles(src, false)
		if !with || without {
			continue
		}
		var names []string
		for _, m := range testFuncs.FindAllStringSubmatch(src, -1) {
			names = append(names, m[1])
		}
		if len(names) == 0 { // helpers only
			out = append(out, filepath.Base(f))
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s)", filepath.Base(f), strings.Join(names, ", ")))
	}
	return strings.Join(out, ", "), nil
}

var testFuncs = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w*)\(`)

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
func (*Device) SetLateCopies(bool)                            {}
func (*Device) SetReverseThreads(bool)                        {}
func (*Device) SetGuardFill(byte)                             {}
