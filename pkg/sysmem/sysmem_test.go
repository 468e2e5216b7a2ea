package sysmem

import "testing"

func TestPhysical(t *testing.T) {
	m := Physical()
	if m < 1<<26 || m > Unknown {
		t.Fatalf("Physical() = %g bytes: not a machine's memory", m)
	}
}
