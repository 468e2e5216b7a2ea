package artifacttest

import (
	"math"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
)

// SameTensors fails unless the checkpoints at a and b hold the same step, Adam step and
// learning rate and the same tensors, bit for bit: what a resumed run must share with an
// uninterrupted one.
func SameTensors(t testing.TB, a, b string) {
	t.Helper()
	x, err := artifact.ReadCheckpoint(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := artifact.ReadCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	if x.Meta.Step != y.Meta.Step || x.Meta.AdamStep != y.Meta.AdamStep || x.Meta.LR != y.Meta.LR || len(x.Tensors) != len(y.Tensors) {
		t.Fatalf("%s: step %d, %d tensors; %s: step %d, %d tensors", a, x.Meta.Step, len(x.Tensors), b, y.Meta.Step, len(y.Tensors))
	}
	for i := range x.Tensors {
		p, q := x.Tensors[i], y.Tensors[i]
		if p.Name != q.Name || p.Role != q.Role || len(p.Values) != len(q.Values) {
			t.Fatalf("tensor %d: %s/%s vs %s/%s", i, p.Name, p.Role, q.Name, q.Role)
		}
		for j := range p.Values {
			if math.Float32bits(p.Values[j]) != math.Float32bits(q.Values[j]) {
				t.Fatalf("%s (%s)[%d]: %v in %s, %v in %s", p.Name, p.Role, j, p.Values[j], a, q.Values[j], b)
			}
		}
	}
}

// EachStepOnce fails unless the train log at path has one train row for each of steps
// 0 … steps−1, in order: a run interrupted and resumed logs no step twice and skips none.
func EachStepOnce(t testing.TB, path string, steps int64) {
	t.Helper()
	_, rows, err := artifact.ReadTrainLog(path)
	if err != nil {
		t.Fatal(err)
	}
	next := int64(0)
	for _, r := range rows {
		if r.Kind == artifact.LogTrain {
			if r.Step != next {
				t.Fatalf("%s: step %d after %d", path, r.Step, next-1)
			}
			next++
		}
	}
	if next != steps {
		t.Fatalf("%s ends at step %d, want %d steps", path, next, steps)
	}
}
