// Command paritycheck compares this project's training loss curves with QE-ConE's, the
// equal-budget learning check of `make parity`:
//
//	go run ./scripts/reference/paritycheck --reference testdata/reference/curves.json \
//	    [--window 50] LOG.arrow...
//
// The reference file is make_fixtures.py curves' output (QE-ConE's loss per step and
// pool, one run per seed); each LOG is a train-log artifact of this project's run of the
// same configuration and train queries, one per seed. For each window of steps and each
// pool it prints the mean loss of every run, and says whether the project's runs lie
// within the reference's run-to-run spread: the mean over the project's seeds inside
// [min, max] of the reference seeds' means (strict), and the two seed ranges overlapping.
// It exits non-zero when a window fails the overlap test, and refuses logs whose
// configuration (width of the projection MLP included) is not the reference's.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/rocone/rocone/pkg/artifact"
)

type refFile struct {
	Config map[string]any `json:"config"`
	Runs   map[string]struct {
		LossPath  []float64 `json:"loss_path"`
		LossOther []float64 `json:"loss_other"`
	} `json:"runs"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "paritycheck:", err)
		os.Exit(1)
	}
}

func run() error {
	ref := flag.String("reference", "testdata/reference/curves.json", "QE-ConE's curves (make_fixtures.py curves)")
	window := flag.Int("window", 50, "steps per window")
	flag.Parse()
	if flag.NArg() == 0 {
		return fmt.Errorf("give the project's train-log files")
	}
	b, err := os.ReadFile(*ref)
	if err != nil {
		return err
	}
	var rf refFile
	if err := json.Unmarshal(b, &rf); err != nil {
		return fmt.Errorf("%s: %w", *ref, err)
	}
	var seeds []string
	for s := range rf.Runs {
		seeds = append(seeds, s)
	}
	sort.Strings(seeds)
	if len(seeds) < 2 {
		return fmt.Errorf("%s: %d reference runs; the spread needs at least 2", *ref, len(seeds))
	}
	steps := len(rf.Runs[seeds[0]].LossPath)
	var refPath, refOther [][]float64
	for _, s := range seeds {
		r := rf.Runs[s]
		if len(r.LossPath) != steps || len(r.LossOther) != steps {
			return fmt.Errorf("%s: run %s has %d/%d steps, run %s %d", *ref, s, len(r.LossPath), len(r.LossOther), seeds[0], steps)
		}
		refPath = append(refPath, r.LossPath)
		refOther = append(refOther, r.LossOther)
	}
	var ourPath, ourOther [][]float64
	for _, path := range flag.Args() {
		meta, rows, err := artifact.ReadTrainLog(path)
		if err != nil {
			return err
		}
		if err := sameConfig(rf.Config, meta.Config); err != nil {
			return fmt.Errorf("%s against %s: %w", path, *ref, err)
		}
		p, o := make([]float64, steps), make([]float64, steps)
		n := 0
		for _, r := range rows {
			if r.Kind != "train" || r.Step < 0 || int(r.Step) >= steps {
				continue
			}
			p[r.Step], o[r.Step] = r.LossPath, r.LossOther
			n++
		}
		if n != steps {
			return fmt.Errorf("%s: %d train rows in steps [0,%d), want %d (same --steps as the reference)", path, n, steps, steps)
		}
		ourPath = append(ourPath, p)
		ourOther = append(ourOther, o)
	}
	fmt.Printf("reference: %s, %d seeds (%v); project: %d runs; config %v\n\n", *ref, len(seeds), seeds, len(ourPath), rf.Config)
	fmt.Println("| steps | pool | QE-ConE mean [min, max] | project mean [min, max] | within | overlap |")
	fmt.Println("|---|---|---|---|---|---|")
	failed := 0
	for lo := 0; lo < steps; lo += *window {
		hi := min(lo+*window, steps)
		for _, pool := range []struct {
			name     string
			ref, our [][]float64
		}{{"path", refPath, ourPath}, {"other", refOther, ourOther}} {
			rm, rlo, rhi := spread(pool.ref, lo, hi)
			om, olo, ohi := spread(pool.our, lo, hi)
			within := om >= rlo && om <= rhi
			overlap := olo <= rhi && ohi >= rlo
			if !overlap {
				failed++
			}
			fmt.Printf("| %d–%d | %s | %.4f [%.4f, %.4f] | %.4f [%.4f, %.4f] | %s | %s |\n",
				lo, hi-1, pool.name, rm, rlo, rhi, om, olo, ohi, yes(within), yes(overlap))
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d windows where the project's seed range and QE-ConE's do not overlap", failed)
	}
	return nil
}

// configKeys pairs make_fixtures.py curves' config keys with the train log's: the runs
// compared must share every one of them, or a difference in the curves says nothing about
// the implementations (a 128-wide MLP against QE-ConE's 1600 learns visibly faster).
var configKeys = []struct{ ref, log string }{
	{"dim", "dim"}, {"hidden", "cone_hidden"}, {"batch", "batch"}, {"negatives", "negatives"},
	{"gamma", "gamma"}, {"center_reg", "lambda"}, {"lr", "lr"}, {"drop", "dropout"}, {"steps", "steps"},
}

// sameConfig returns an error naming the first setting where the train log's
// configuration (JSON) differs from the reference's. The log's cone_hidden 0 is ConE's
// default width, 1600.
func sameConfig(ref map[string]any, logConfig string) error {
	var lc map[string]any
	if err := json.Unmarshal([]byte(logConfig), &lc); err != nil {
		return fmt.Errorf("train log config: %w", err)
	}
	if m, ok := lc["model"].(string); ok && m != "cone" {
		return fmt.Errorf("model %q, the reference is ConE (cone)", m)
	}
	for _, k := range configKeys {
		rv, ok := ref[k.ref].(float64)
		if !ok {
			return fmt.Errorf("reference config has no numeric %q", k.ref)
		}
		lv, ok := lc[k.log].(float64)
		if !ok {
			return fmt.Errorf("train log config has no numeric %q", k.log)
		}
		if k.log == "cone_hidden" && lv == 0 {
			lv = 1600
		}
		if math.Abs(rv-lv) > 1e-9*math.Max(1, math.Abs(rv)) {
			return fmt.Errorf("%s %v, the reference's %s is %v", k.log, lv, k.ref, rv)
		}
	}
	return nil
}

// spread returns the mean over runs of each run's mean loss in [lo, hi), and the
// smallest and largest run mean.
func spread(runs [][]float64, lo, hi int) (mean, mn, mx float64) {
	mn, mx = math.Inf(1), math.Inf(-1)
	for _, r := range runs {
		var s float64
		for _, v := range r[lo:hi] {
			s += v
		}
		m := s / float64(hi-lo)
		mean += m
		mn, mx = min(mn, m), max(mx, m)
	}
	return mean / float64(len(runs)), mn, mx
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
