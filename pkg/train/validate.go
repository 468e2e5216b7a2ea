package train

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/eval"
)

// testHookBeforeValidation, when set by a test, runs before every validation.
var testHookBeforeValidation func(step int)

// evaluate validates after step s and logs the results.
func (t *trainer) evaluate(ctx context.Context, s int, lr float64) (*eval.Summary, error) {
	if testHookBeforeValidation != nil {
		testHookBeforeValidation(s)
	}
	start := time.Now()
	if err := t.upd.Download(false); err != nil {
		return nil, fmt.Errorf("validation after step %d: reading the parameters from the device: %w", s, err)
	}
	opts := eval.RankOptions{Workers: t.workers}
	if r := t.upd.Ranker(); r != nil {
		// On the device, from the parameters there, as `rank --device cuda` does.
		opts.Device, opts.Batch = r, 512
	}
	ranks, err := eval.RankQueries(ctx, t.evalModel, t.valid, opts)
	if err != nil {
		return nil, fmt.Errorf("validation after step %d: %w", s, err)
	}
	sum, err := eval.Summarize(t.valid, ranks)
	if err != nil {
		return nil, fmt.Errorf("validation after step %d: %w", s, err)
	}
	t.timings.Eval += time.Since(start).Seconds()
	elapsed := t.elapsed()
	add := func(typ string, queries int, m eval.Metrics) {
		t.log = append(t.log, artifact.TrainLogRow{Step: int64(s), Kind: artifact.LogValid, Type: typ, LR: lr,
			Loss: math.NaN(), LossPath: math.NaN(), LossOther: math.NaN(),
			MRR: m.MRR, Hits1: m.H1, Hits3: m.H3, Hits10: m.H10, Queries: int64(queries), ElapsedS: elapsed})
	}
	var all eval.Metrics
	total := 0
	for _, tr := range sum.Types {
		add(tr.Type, tr.Queries, tr.Metrics)
		all.MRR += tr.MRR
		all.H1 += tr.H1
		all.H3 += tr.H3
		all.H10 += tr.H10
		total += tr.Queries
	}
	if n := float64(len(sum.Types)); n > 0 {
		all = eval.Metrics{MRR: all.MRR / n, H1: all.H1 / n, H3: all.H3 / n, H10: all.H10 / n}
		add("AVG", total, all)
	}
	groups := []struct {
		name string
		g    eval.GroupAverage
	}{{"AVG-EPFO", sum.EPFO}, {"AVG-neg", sum.Negation}}
	for _, g := range groups {
		if g.g.Complete {
			n := 0
			for _, typ := range g.g.Types {
				tr, _ := sum.Type(typ)
				n += tr.Queries
			}
			add(g.name, n, g.g.Metrics)
		}
	}
	if t.opts.Progress != nil {
		fmt.Fprintf(t.opts.Progress, "step %d: validation on %d queries (%.1fs): MRR %.2f", s, total, time.Since(start).Seconds(), 100*all.MRR)
		for _, tr := range sum.Types {
			fmt.Fprintf(t.opts.Progress, "  %s %.2f", tr.Type, 100*tr.MRR)
		}
		fmt.Fprintln(t.opts.Progress)
	}
	return &sum, nil
}
