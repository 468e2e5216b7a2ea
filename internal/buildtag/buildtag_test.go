package buildtag

import (
	"runtime"
	"testing"
)

func TestCompiles(t *testing.T) {
	for _, tc := range []struct {
		src       string
		cgo, want bool
	}{
		{"package x\n", false, true},
		{"//go:build cgo\n\npackage x\n", true, true},
		{"//go:build cgo\n\npackage x\n", false, false},
		{"//go:build !cgo\n\npackage x\n", false, true},
		{"//go:build cgo && !cuda\n\npackage x\n", true, true},
		{"//go:build cuda\n\npackage x\n", true, false},
		{"//go:build " + runtime.GOARCH + "\n\npackage x\n", false, true},
		{"//go:build plan9\n\npackage x\n", true, false},
		{"// A comment.\n//go:build cgo\n\npackage x\n", false, false},
		{"package x\n\n//go:build cgo\n", false, true}, // after the package clause: not a constraint
	} {
		got, err := Compiles(tc.src, tc.cgo)
		if err != nil || got != tc.want {
			t.Errorf("Compiles(%q, cgo=%v) = %v, %v; want %v", tc.src, tc.cgo, got, err, tc.want)
		}
	}
	if _, err := Compiles("//go:build cgo &&\n\npackage x\n", true); err == nil {
		t.Error("a malformed //go:build line: no error")
	}
}
