// Package kernels holds the CUDA C sources of the RoConE GPU kernels and their PTX,
// compiled for compute_80 (Ampere and later; the driver JIT-compiles it for the GPU at
// hand) and committed, so that building needs no nvcc.
//
// The same sources are compiled for the CPU by package emu (their tests run without a
// GPU) and the PTX is loaded by package gpu (built with -tags cuda). After editing a
// .cu file or common.h, or the projection operators (compute.Projections), regenerate with
//
//	go generate ./pkg/gpu/kernels
//
// which needs nvcc (CUDA 11.8 on Debian bookworm: scripts/cuda/install-deps.sh --nvcc)
// and rewrites projection.h (genproj), the .ptx files and ptx.sum; TestPTXUpToDate and
// TestProjectionHeaderUpToDate fail until then.
package kernels

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
)

// NVCCFlags are the flags every .ptx was generated with (see the go:generate lines).
const NVCCFlags = "-ptx -arch=compute_80"

//go:generate go run ./genproj
//go:generate nvcc -ptx -arch=compute_80 -o adam.ptx adam.cu
//go:generate nvcc -ptx -arch=compute_80 -o angle.ptx angle.cu
//go:generate nvcc -ptx -arch=compute_80 -o distance.ptx distance.cu
//go:generate nvcc -ptx -arch=compute_80 -o intersect.ptx intersect.cu
//go:generate nvcc -ptx -arch=compute_80 -o linear.ptx linear.cu
//go:generate nvcc -ptx -arch=compute_80 -o loss.ptx loss.cu
//go:generate nvcc -ptx -arch=compute_80 -o mlp.ptx mlp.cu
//go:generate nvcc -ptx -arch=compute_80 -o negate.ptx negate.cu
//go:generate nvcc -ptx -arch=compute_80 -o rotate.ptx rotate.cu
//go:generate nvcc -ptx -arch=compute_80 -o rows.ptx rows.cu
//go:generate nvcc -ptx -arch=compute_80 -o score.ptx score.cu
//go:generate nvcc -ptx -arch=compute_80 -o tf32.ptx tf32.cu
//go:generate go run gensum.go

// The sources are embedded too: it keeps them in the build cache key of every package
// that imports this one (package emu compiles them through cgo, and the go command does
// not otherwise notice a change to a file it #includes; TestSourcesEmbedded checks that the
// pattern covers every source).

//go:embed *.cu common.h projection.h
var sources embed.FS

//go:embed *.ptx
var ptx embed.FS

//go:embed ptx.sum
var sum string

// Module is one compiled .cu file.
type Module struct {
	Name string // the source's base name without .cu, e.g. "distance"
	PTX  string // its PTX text, NUL-free, ready for cuModuleLoadData
}

// Modules returns every module, sorted by name.
func Modules() []Module {
	names, _ := fs.Glob(ptx, "*.ptx")
	sort.Strings(names)
	out := make([]Module, 0, len(names))
	for _, n := range names {
		b, err := ptx.ReadFile(n)
		if err != nil {
			panic(err) // embedded: cannot happen
		}
		out = append(out, Module{Name: strings.TrimSuffix(n, ".ptx"), PTX: string(b)})
	}
	return out
}

// Param types of a kernel entry, as PTX declares them and as launch arguments are packed
// (each argument travels as a uint64: pointers whole, the others in the low bits).
const (
	ParamPtr = 'p' // .u64: a device pointer (NULL allowed where documented)
	ParamI32 = 'i' // .u32 / .s32: a C int
	ParamF32 = 'f' // .f32: a float
	ParamF64 = 'd' // .f64: a double
)

// Entry is one __global__ function.
type Entry struct {
	Name   string
	Module string
	Params string // one Param* letter per parameter, e.g. "pppi" for (float*, float*, float*, int)
}

var (
	entryRE = regexp.MustCompile(`(?s)\.visible\s+\.entry\s+(\w+)\s*\(([^)]*)\)`)
	paramRE = regexp.MustCompile(`\.param\s+\.(\w+)`)
)

// Entries returns the kernels declared in the PTX, sorted by name.
func Entries() []Entry {
	var out []Entry
	for _, m := range Modules() {
		es, err := ParseEntries(m.Name, m.PTX)
		if err != nil {
			panic(err) // the committed PTX is checked by the tests
		}
		out = append(out, es...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ParseEntries lists the .entry functions of a PTX text with their parameter types.
func ParseEntries(module, text string) ([]Entry, error) {
	var out []Entry
	for _, m := range entryRE.FindAllStringSubmatch(text, -1) {
		e := Entry{Name: m[1], Module: module}
		for _, p := range paramRE.FindAllStringSubmatch(m[2], -1) {
			switch p[1] {
			case "u64", "s64", "b64":
				e.Params += string(ParamPtr)
			case "u32", "s32", "b32":
				e.Params += string(ParamI32)
			case "f32":
				e.Params += string(ParamF32)
			case "f64":
				e.Params += string(ParamF64)
			default:
				return nil, fmt.Errorf("kernels: %s: entry %s: unsupported parameter type .%s", module, e.Name, p[1])
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// Sum returns the contents of ptx.sum: the nvcc version and flags the PTX was generated
// with and the SHA-256 of every source and PTX file at that time.
func Sum() string { return sum }

// Compiler returns the "Cuda compilation tools, release …" line nvcc wrote into the
// committed PTX.
func Compiler() string { return compilerLine(Modules()[0].PTX) }

func compilerLine(ptxText string) string {
	for _, l := range strings.SplitN(ptxText, "\n", 12) {
		if i := strings.Index(l, "Cuda compilation tools"); i >= 0 {
			return strings.TrimSpace(l[i:])
		}
	}
	return ""
}
