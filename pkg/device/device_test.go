package device

import (
	"strings"
	"testing"
)

func TestBackend(t *testing.T) {
	if b, err := Backend("cpu", 1); err != nil || b == nil {
		t.Fatalf("cpu: %v", err)
	}
	if _, err := Backend("tpu", 0); err == nil || !strings.Contains(err.Error(), `"tpu"`) {
		t.Fatalf("tpu: %v", err)
	}
	if openCUDA == nil {
		if _, err := Backend("cuda", 0); err == nil || !strings.Contains(err.Error(), "make build-cuda") {
			t.Fatalf("cuda without the tag: %v", err)
		}
	}
}

// TestRankDeviceNil: no device gives a nil eval.RankDevice, not an interface holding a nil
// pointer, so that the rank stage, which tests it against nil, ranks on the host.
func TestRankDeviceNil(t *testing.T) {
	if r := RankDevice(nil); r != nil {
		t.Fatalf("RankDevice(nil) = %#v, want nil", r)
	}
}
