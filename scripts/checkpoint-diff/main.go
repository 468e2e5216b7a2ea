// Command checkpoint-diff tells whether two checkpoint artifacts hold the same training
// state: every tensor (parameters and Adam's moments) bit for bit, every metadata key, and
// the training state apart from its wall-clock timings, which are all that two runs of
// the same trajectory (say, one interrupted and resumed, one not) write differently.
//
//	go run ./scripts/checkpoint-diff A.arrow B.arrow
//
// Exit status 0 when they are the same (one line on stderr saying so), 1 naming the first
// difference, 2 when a file does not read. make test-slurm uses it to compare a training
// that Slurm's time limit interrupted with an uninterrupted one.
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/rocone/rocone/pkg/artifact"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: checkpoint-diff A.arrow B.arrow")
		os.Exit(2)
	}
	same, err := compare(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkpoint-diff:", err)
		os.Exit(2)
	}
	if same != "" {
		fmt.Fprintf(os.Stderr, "checkpoint-diff: %s and %s differ: %s\n", os.Args[1], os.Args[2], same)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "checkpoint-diff: %s and %s hold the same training state\n", os.Args[1], os.Args[2])
}

// compare returns the first difference between the checkpoints at a and b ("" for
// none), or an error when one does not read.
func compare(a, b string) (string, error) {
	x, err := artifact.ReadCheckpoint(a)
	if err != nil {
		return "", err
	}
	y, err := artifact.ReadCheckpoint(b)
	if err != nil {
		return "", err
	}
	sx, err := withoutTimings(x.Meta.State)
	if err != nil {
		return "", fmt.Errorf("%s: %w", a, err)
	}
	sy, err := withoutTimings(y.Meta.State)
	if err != nil {
		return "", fmt.Errorf("%s: %w", b, err)
	}
	mx, my := x.Meta, y.Meta
	mx.State, my.State = "", ""
	if mx != my {
		return fmt.Sprintf("metadata %+v vs %+v", mx, my), nil
	}
	if sx != sy {
		return fmt.Sprintf("training state %s vs %s", sx, sy), nil
	}
	if len(x.Tensors) != len(y.Tensors) {
		return fmt.Sprintf("%d tensors vs %d", len(x.Tensors), len(y.Tensors)), nil
	}
	for i := range x.Tensors {
		p, q := &x.Tensors[i], &y.Tensors[i]
		if p.Name != q.Name || p.Role != q.Role || fmt.Sprint(p.Shape) != fmt.Sprint(q.Shape) {
			return fmt.Sprintf("tensor %d: %s (%s) %v vs %s (%s) %v", i, p.Name, p.Role, p.Shape, q.Name, q.Role, q.Shape), nil
		}
		for j := range p.Values {
			if math.Float32bits(p.Values[j]) != math.Float32bits(q.Values[j]) {
				return fmt.Sprintf("tensor %s (%s), value %d: %v vs %v", p.Name, p.Role, j, p.Values[j], q.Values[j]), nil
			}
		}
	}
	return "", nil
}

// withoutTimings is the state JSON without its timings key, re-encoded (keys sorted).
func withoutTimings(state string) (string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(state), &m); err != nil {
		return "", fmt.Errorf("training state: %w", err)
	}
	delete(m, "timings")
	out, err := json.Marshal(m)
	return string(out), err
}
