//go:build !cuda

package gpu

import (
	"errors"
	"testing"
)

// TestOpenWithoutTag: without the cuda tag, Open explains how to get GPU support.
func TestOpenWithoutTag(t *testing.T) {
	if Built {
		t.Fatal("Built without the cuda tag")
	}
	if _, err := Open(0); !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("Open: %v", err)
	}
}
