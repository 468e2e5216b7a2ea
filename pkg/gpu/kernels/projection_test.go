package kernels

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
)

// TestProjectionHeaderUpToDate: projection.h, which the kernels include for the
// projection operators' numbers, is what compute.Projections generates: a rule added,
// renumbered or renamed in Go and not regenerated fails here (go generate ./pkg/gpu/kernels).
func TestProjectionHeaderUpToDate(t *testing.T) {
	got, err := os.ReadFile("projection.h")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != compute.ProjectionHeader() {
		t.Fatalf("projection.h is not what compute.Projections generates; run `go generate ./pkg/gpu/kernels`\nhave:\n%s\nwant:\n%s", got, compute.ProjectionHeader())
	}
	// Read back as the kernels see it: every operator's number, and no other.
	defs := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^#define PROJECT_([A-Z0-9_]+) (\d+)$`).FindAllStringSubmatch(string(got), -1) {
		n, _ := strconv.Atoi(m[2])
		defs[m[1]] = n
	}
	if len(defs) != len(compute.Projections) {
		t.Fatalf("projection.h defines %d rules, compute.Projections has %d", len(defs), len(compute.Projections))
	}
	for _, p := range compute.Projections {
		if n, ok := defs[strings.ToUpper(p.Name)]; !ok || n != int(p.Projection) {
			t.Errorf("PROJECT_%s = %d (defined %v), compute says %d", strings.ToUpper(p.Name), n, ok, p.Projection)
		}
	}
	// The rotation kernels name only rules the header defines.
	src, err := os.ReadFile("rotate.cu")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`PROJECT_[A-Z0-9_]+`).FindAllString(string(src), -1) {
		if _, ok := defs[strings.TrimPrefix(m, "PROJECT_")]; !ok {
			t.Errorf("rotate.cu uses %s, which projection.h does not define", m)
		}
	}
}
