// Command checkpoint-diff tells whether two checkpoint artifacts hold the same training
// state: every tensor (parameters and Adam's moments) bit for bit, every metadata key, and
// the training state apart from the wall-clock timings that older checkpoints hold (the
// only bytes in which two runs of one trajectory, say one interrupted and resumed and one
// not, differed; today's checkpoints leave them to the train log, so such runs write the
// same file).
//
//	go run ./scripts/checkpoint-diff A.arrow B.arrow
//
// Exit status 0 when they are the same (one line on stderr saying so), 1 naming the first
// difference, 2 when a file does not read. make test-slurm uses it to compare a training
// that Slurm's time limit interrupted with an uninterrupted one.
package main

import (
	"fmt"
	"os"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/train"
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
// none: train.CheckpointDiff), or an error when one does not read.
func compare(a, b string) (string, error) {
	x, err := artifact.ReadCheckpoint(a)
	if err != nil {
		return "", err
	}
	y, err := artifact.ReadCheckpoint(b)
	if err != nil {
		return "", err
	}
	return train.CheckpointDiff(x, y)
}
