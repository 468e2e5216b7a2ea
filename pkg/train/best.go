package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/query"
)

// DefaultBestMetric is what --keep-best and --patience compare when --best-metric is not
// given: the MRR averaged over the papers' 9 EPFO types.
const DefaultBestMetric = "mrr:epfo"

// BestMetric is one number of a validation, the one that "best" means: a measure (MRR or
// Hits@K) of one row of the train log's validation rows (a query type, or one of the
// averages AVG, AVG-EPFO, AVG-neg). Higher is better for every measure.
type BestMetric struct {
	Measure string // mrr, hits@1, hits@3 or hits@10
	Group   string // the canonical group: epfo, neg, avg, or a query type's name
}

// bestMeasures are the measures, as written in --best-metric.
var bestMeasures = []string{"mrr", "hits@1", "hits@3", "hits@10"}

// ParseBestMetric reads MEASURE[:GROUP]: MEASURE is mrr, hits@1, hits@3 or hits@10;
// GROUP is epfo (the EPFO average, AVG-EPFO in the train log; the default), neg (the
// negation average, AVG-neg), avg (the mean over every validated type, AVG) or a query
// type's name as the train log writes it (2p, 2in, or a custom structure). Measures and
// the group names are case-insensitive; a type's name is taken as written.
func ParseBestMetric(s string) (BestMetric, error) {
	measure, group, _ := strings.Cut(strings.TrimSpace(s), ":")
	measure = strings.ToLower(strings.TrimSpace(measure))
	group = strings.TrimSpace(group)
	if !slices.Contains(bestMeasures, measure) {
		return BestMetric{}, fmt.Errorf("best-metric %q: unknown measure %q: want MEASURE[:GROUP] with MEASURE one of %s "+
			"and GROUP epfo (the default), neg, avg or a query type (e.g. mrr:epfo, hits@10:2p)", s, measure, strings.Join(bestMeasures, ", "))
	}
	switch strings.ToLower(group) {
	case "", "epfo", "avg-epfo":
		group = "epfo"
	case "neg", "avg-neg":
		group = "neg"
	case "avg":
		group = "avg"
	}
	return BestMetric{Measure: measure, Group: group}, nil
}

// String is the canonical form, MEASURE:GROUP.
func (m BestMetric) String() string { return m.Measure + ":" + m.Group }

// LogType is the type column of the train log's validation row that holds the metric.
func (m BestMetric) LogType() string {
	switch m.Group {
	case "epfo":
		return "AVG-EPFO"
	case "neg":
		return "AVG-neg"
	case "avg":
		return "AVG"
	}
	return m.Group
}

// value returns the metric's value in a validation row.
func (m BestMetric) value(r artifact.TrainLogRow) float64 {
	switch m.Measure {
	case "hits@1":
		return r.Hits1
	case "hits@3":
		return r.Hits3
	case "hits@10":
		return r.Hits10
	}
	return r.MRR
}

// checkValid checks, before any training, that every validation will have the metric:
// the valid file holds the type, or every type of the average.
func (m BestMetric) checkValid(valid []eval.RankQuery, path string) error {
	have := map[string]bool{}
	for _, q := range valid {
		have[q.Type] = true
	}
	var need []string
	switch m.Group {
	case "epfo":
		need = query.EPFOTypes
	case "neg":
		need = query.NegationTypes
	case "avg":
		return nil
	default:
		need = []string{m.Group}
	}
	var missing []string
	for _, t := range need {
		if !have[t] {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var types []string
	for t := range have {
		types = append(types, t)
	}
	slices.Sort(types)
	if m.Group == "epfo" || m.Group == "neg" {
		return fmt.Errorf("best-metric %s: the %s average needs all of %s, and %s has no %s queries (it has %s); "+
			"choose another metric (e.g. %s:avg or %s:1p)", m, m.Group, strings.Join(need, " "), path, strings.Join(missing, ", "),
			strings.Join(types, " "), m.Measure, m.Measure)
	}
	return fmt.Errorf("best-metric %s: %s has no %s queries (it has %s)", m, path, m.Group, strings.Join(types, " "))
}

// bestState is the best validation so far and the count that early stopping compares
// with Config.Patience, kept in every checkpoint (state.Best) so that a resumed run
// keeps and stops exactly where an uninterrupted one does. The value is stored in JSON
// as Go writes a float64, which reads back to the same bits.
type bestState struct {
	Value float64 `json:"value"` // the metric at Step
	Step  int     `json:"step"`  // the step after which that validation ran (the train log's step)
	// Since counts the validations after Step, none of which improved on Value.
	Since int `json:"since"`
}

// improve records the validation after step s with the metric's value v in b (nil:
// none yet) and returns the new state and whether v is a new best: strictly higher than
// every earlier one (the first always is; on a tie the earlier checkpoint stays the best).
// A NaN (which no validation of finite parameters gives) never improves.
func improve(b *bestState, s int, v float64) (*bestState, bool) {
	if b == nil && math.IsNaN(v) {
		return nil, false
	}
	if b == nil || v > b.Value {
		return &bestState{Value: v, Step: s}, true
	}
	nb := *b
	nb.Since++
	return &nb, false
}

// stopped reports whether early stopping ends the run: patience validations in a row
// have not improved on the best.
func (c Config) stopped(b *bestState) bool {
	return c.Patience > 0 && b != nil && b.Since >= c.Patience
}

// checkBestFile checks, for a resumed run that keeps its best (Config.KeepBest) and has
// one (t.best), that the file at --best holds it. The checkpoint records the best's step
// and value but not where it was written (a path would make one configuration's
// checkpoints differ by where they were written), so a copy of the checkpoint resumed
// under another name, or a resume with another --best, meets a --best that does not
// hold it, and the run used to name that file as the best's home all the same. It
// returns "" when the file holds this run's best so far, and otherwise why not: the run
// says so, and names the file only once it has written it. A file that is not a
// checkpoint of this run (another configuration, KG or train file, or no checkpoint) is
// an error, as for a fresh run (checkOverwrite): the next better validation would
// replace it.
func (t *trainer) checkBestFile() (string, error) {
	path := t.opts.bestPath()
	meta, err := artifact.ReadCheckpointMeta(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "no such file", nil
	}
	refuse := func(what string) error {
		return fmt.Errorf("--best %s %s; the resumed run would replace it at its next better validation: "+
			"give --best with the file that holds this run's best (after step %d), or another path", path, what, t.best.Step)
	}
	if err != nil {
		return "", refuse(fmt.Sprintf("exists and is not a checkpoint (%v)", err))
	}
	saved, err := ParseConfig(meta.Config)
	if err != nil {
		return "", refuse(fmt.Sprintf("exists and its configuration does not read (%v)", err))
	}
	var st state
	if err := json.Unmarshal([]byte(meta.State), &st); err != nil {
		return "", refuse(fmt.Sprintf("exists and its training state does not read (%v)", err))
	}
	switch diff := Diff(saved, t.cfg, ResumableKeys...); {
	case len(diff) > 0:
		return "", refuse(fmt.Sprintf("holds the checkpoint of another run (%s)", strings.Join(diff, ", ")))
	case meta.KGDigest != t.kg || meta.TrainFingerprint != t.ts.fingerprint:
		return "", refuse("holds the checkpoint of a run on another KG or train file")
	case meta.Step > int64(t.stepsDone):
		// A better best than the checkpoint records, written before the next checkpoint
		// and then a crash (SIGKILL): the replay of those steps is bit-identical, so it
		// finds that best again and writes the file again.
		return "", nil
	case meta.Step != int64(t.best.Step+1):
		return fmt.Sprintf("it holds this configuration's checkpoint after %d steps, not the best's %d", meta.Step, t.best.Step+1), nil
	case st.Best == nil || st.Best.Step != t.best.Step || st.Best.Value != t.best.Value:
		return fmt.Sprintf("it holds a checkpoint after %d steps of another trajectory of this configuration", meta.Step), nil
	}
	return "", nil
}

// BestPath is where --keep-best writes by default: the checkpoint's name with .best
// before its extension (model.arrow: model.best.arrow; a name without one gets .best).
func BestPath(checkpoint string) string {
	ext := filepath.Ext(checkpoint)
	if ext == "" || strings.HasPrefix(filepath.Base(checkpoint), ".") && filepath.Base(checkpoint) == ext {
		return checkpoint + ".best"
	}
	return strings.TrimSuffix(checkpoint, ext) + ".best" + ext
}
