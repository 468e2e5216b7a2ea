//go:build ignore

// gensum writes ptx.sum: run by `go generate` after nvcc (see kernels.go).
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	var files []string
	for _, pat := range []string{"*.cu", "*.h", "*.ptx"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			panic(err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	var b strings.Builder
	b.WriteString("# SHA-256 of the kernel sources and of the PTX generated from them by `go generate`.\n")
	b.WriteString("# Checked by TestPTXUpToDate; do not edit by hand.\n")
	ptx, err := os.ReadFile("distance.ptx")
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(&b, "compiler: %s\n", compiler(string(ptx)))
	fmt.Fprintf(&b, "flags: %s\n", "-ptx -arch=compute_80")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(&b, "%x  %s\n", sha256.Sum256(data), f)
	}
	if err := os.WriteFile("ptx.sum", []byte(b.String()), 0o644); err != nil {
		panic(err)
	}
}

func compiler(ptx string) string {
	for _, l := range strings.SplitN(ptx, "\n", 12) {
		if i := strings.Index(l, "Cuda compilation tools"); i >= 0 {
			return strings.TrimSpace(l[i:])
		}
	}
	return "unknown"
}
