package repocheck

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// floors is the architecture as a stack: a package imports only packages on lower floors
// (README, "Architecture"). The GPU has one tree (pkg/gpu), above the model and below the
// trainer's device updater (gpumodel), and only pkg/device, the --device switch, sits
// above both the trainer and the GPU. A package missing from the table fails the test: a
// new package gets its floor here.
var floors = [][]string{
	{ // 0: no imports of this module
		"pkg/adam", "pkg/cliargs", "pkg/compute", "pkg/kg", "pkg/outfile", "pkg/picklescan", "pkg/query", "pkg/sysmem",
		"pkg/shard", "pkg/model/internal/vmath", "pkg/gpu/internal/cuinit", "pkg/gpu/kernels",
		"internal/arrowcheck", "internal/buildtag", "internal/repocheck", "internal/stagecheck",
	},
	{ // 1: the artifacts, the model, the kernels
		"pkg/answer", "pkg/artifact", "pkg/compute/cpu", "pkg/model", "pkg/synth", "pkg/gpu", "pkg/gpu/emu",
		"pkg/gpu/kernels/genproj",
	},
	{ // 2: what works on a model or on artifacts
		"pkg/checkpoint", "pkg/eval", "pkg/export", "pkg/qecone", "pkg/sample", "pkg/gpu/roofline",
	},
	{ // 3: the trainer, the reports
		"pkg/train", "pkg/report",
	},
	{ // 4: the stages' pipelines; the model resident on the GPU (a train.Device)
		"pkg/pipeline", "pkg/gpu/gpumodel",
	},
	{ // 5: --device: the one place that picks a backend
		"pkg/device",
	},
	{ // 6: the binaries
		"cmd/sample", "cmd/train", "cmd/embed", "cmd/rank", "cmd/metrics",
	},
	// 7–9: helpers of the tests, which only _test.go files may import (firstTestFloor on)
	{"internal/artifacttest", "internal/computetest", "internal/gputest", "internal/stagebuild", "internal/traintest"},
	{"internal/outfiletest"},
	{"internal/stagetest"},
}

// firstTestFloor is the floor of the first test helpers.
const firstTestFloor = 7

// gpuTree is the device code: neither the trainer nor the pipelines (nor the kernels' seam,
// pkg/compute) depend on it, in any build.
const gpuTree = "pkg/gpu"

const module = "github.com/rocone/rocone/"

// imports lists each package of the module (production files only, with tags) and the
// module's packages it imports; with deps, every module package it depends on.
func imports(t *testing.T, tags string, deps bool) map[string][]string {
	t.Helper()
	field := ".Imports"
	if deps {
		field = ".Deps"
	}
	cmd := exec.Command("go", "list", "-tags", tags, "-f", `{{.ImportPath}}{{range `+field+`}} {{.}}{{end}}`,
		"./pkg/...", "./internal/...", "./cmd/...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		m[pkg] = nil
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				m[pkg] = append(m[pkg], strings.TrimPrefix(imp, module))
			}
		}
	}
	return m
}

func TestImportFloors(t *testing.T) {
	floor := map[string]int{}
	for f, pkgs := range floors {
		for _, p := range pkgs {
			floor[p] = f
		}
	}
	for _, tags := range []string{"", "cuda"} {
		graph := imports(t, tags, false)
		if len(graph) < 30 {
			t.Fatalf("go list found %d packages: the module's layout moved", len(graph))
		}
		for pkg, imps := range graph {
			f, ok := floor[pkg]
			if !ok {
				t.Errorf("package %s has no floor: add it to floors in %s", pkg, "internal/repocheck/imports_test.go")
				continue
			}
			for _, imp := range imps {
				g, ok := floor[imp]
				switch {
				case !ok:
					t.Errorf("%s imports %s, which has no floor", pkg, imp)
				case g >= f:
					t.Errorf("tags %q: %s (floor %d) imports %s (floor %d): an import must go down a floor", tags, pkg, f, imp, g)
				}
			}
		}
		for pkg, imps := range graph {
			for _, p := range imps {
				if floor[pkg] < firstTestFloor && floor[p] >= firstTestFloor {
					t.Errorf("production package %s imports the test helper %s", pkg, p)
				}
			}
		}
		// The trainer, the pipelines and the kernels' seam depend on no device code,
		// directly or not.
		deps := imports(t, tags, true)
		for _, pkg := range []string{"pkg/train", "pkg/pipeline", "pkg/compute", "pkg/compute/cpu", "pkg/model", "pkg/eval"} {
			for _, d := range deps[pkg] {
				if d == gpuTree || strings.HasPrefix(d, gpuTree+"/") {
					t.Errorf("tags %q: %s depends on %s", tags, pkg, d)
				}
			}
		}
	}
}
