package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/report"
	"github.com/rocone/rocone/pkg/shard"
	"github.com/rocone/rocone/pkg/train"
)

// MaxResamples bounds --resamples: the bootstrap keeps 4 float64 per resample and type,
// and redraws every query of a type for each; past this, memory and time grow for nothing
// (the percentile interval's digits settle within a few thousand).
const MaxResamples = 100_000

// MetricsConfig is what `metrics` does.
type MetricsConfig struct {
	// Ranks are ranks artifacts of the same queries: the seeds of one model (distinct
	// checkpoints of one model and training configuration), or with Models several models.
	// The n shards of a `rank --shard i/n` run are one run (report.GroupShards).
	Ranks     []string
	Models    bool   // group Ranks by model and configuration, one table row per model
	Output    string // metrics artifact; "" for none
	Compare   bool   // put the published RoConE and ConE rows beside ours
	Plot      string // MRR-per-type plot (.png or .svg); "" for none
	TrainLog  string // a train-log artifact to plot as curves; optional
	CurvePlot string // where the training curves go (.png or .svg); needed with TrainLog
	// Resamples is the number of bootstrap resamples over queries; 0 turns the bootstrap
	// off (the intervals are then NaN in the artifact); negative is an error.
	Resamples int
	Seed      uint64 // bootstrap seed
	Label     string // the name of our row in the tables; default: the model
}

// ranksRun is one ranks file read for metrics.
type ranksRun struct {
	meta artifact.RanksMeta
	run  report.Run
	id   report.RunIdentity
}

// ranksFile is one ranks file as read, before shards are joined into runs.
type ranksFile struct {
	meta artifact.RanksMeta
	rows []artifact.Rank
	id   report.RunIdentity
}

func readRanksFile(path string) (ranksFile, error) {
	meta, rows, err := artifact.ReadRanks(path)
	if err != nil {
		return ranksFile{}, err
	}
	id := report.RunIdentity{Path: path, Queries: meta.QueriesHash, Dataset: meta.Dataset, Split: meta.Split,
		Model: meta.Model, Config: meta.TrainConfig, Seed: meta.Seed, CheckpointHash: meta.CheckpointHash,
		KG: meta.KGDigest, TrainFile: meta.TrainFingerprint}
	if path != "-" {
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			id.File = fi
		}
	}
	return ranksFile{meta: meta, rows: rows, id: id}, nil
}

// readRanksRuns reads ranks files and joins the shards of each `rank --shard` run
// (report.GroupShards) into one run, the shards' rows in shard order: the rows the
// unsharded run writes. A query ranked by two shards of one run is an error.
func readRanksRuns(paths []string) ([]ranksRun, error) {
	files := make([]ranksFile, len(paths))
	ids := make([]report.RunIdentity, len(paths))
	specs := make([]shard.Spec, len(paths))
	for i, path := range paths {
		f, err := readRanksFile(path)
		if err != nil {
			return nil, err
		}
		files[i], ids[i], specs[i] = f, f.id, f.meta.Shard
	}
	groups, err := report.GroupShards(ids, specs)
	if err != nil {
		return nil, err
	}
	runs := make([]ranksRun, len(groups))
	for g, group := range groups {
		if err := checkTiling(files, group); err != nil {
			return nil, err
		}
		first := files[group[0]]
		name := first.id.Path
		if len(group) > 1 {
			name = fmt.Sprintf("%s (+ %d more shards)", name, len(group)-1)
		}
		var rids []int64
		var types []string
		var ranks []int32
		from := map[int64]int{} // query id -> the file that ranks it
		for _, i := range group {
			for _, r := range files[i].rows {
				if k, ok := from[r.ID]; ok && k != i {
					return nil, fmt.Errorf("%s and %s both rank query %d: shards of one run rank disjoint queries", files[k].id.Path, files[i].id.Path, r.ID)
				}
				from[r.ID] = i
				rids, types, ranks = append(rids, r.ID), append(types, r.Type), append(ranks, r.Rank)
			}
			files[i].rows = nil
		}
		grouped, err := report.GroupRanks(rids, types, ranks)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		run, err := report.RunFromRanks(name, grouped)
		if err != nil {
			return nil, err
		}
		id := first.id
		id.Path = name
		runs[g] = ranksRun{meta: first.meta, run: run, id: id}
	}
	return runs, nil
}

// checkTiling checks that the shards of one run (group, in shard order) rank every query
// of the file once, where they record their ranges (shard files of older versions do not).
func checkTiling(files []ranksFile, group []int) error {
	if len(group) < 2 {
		return nil
	}
	names := make([]string, len(group))
	spans := make([]shard.Span, len(group))
	for k, i := range group {
		names[k], spans[k] = files[i].id.Path, files[i].meta.ShardRange
		if !spans[k].Known() {
			return nil
		}
	}
	return shard.CheckTiling(fmt.Sprintf("ranks shards of checkpoint sha256 %.12s", files[group[0]].id.CheckpointHash), names, spans)
}

// comparable says whether the published rows can go beside ranks of dataset and split
// when --compare asks for them, and otherwise a note for the table that says why not: the
// papers publish test-split results of three datasets only.
func comparable(compare bool, dataset, split string) (bool, string) {
	if !compare {
		return false, ""
	}
	if _, err := report.CanonicalDataset(dataset); err != nil {
		return false, fmt.Sprintf("(--compare: %s)\n\n", strings.TrimPrefix(err.Error(), "report: "))
	}
	if split != "test" {
		return false, fmt.Sprintf("(--compare: the published rows are of the test queries, these ranks of the %s split: not comparable, left out)\n\n", split)
	}
	return true, ""
}

// Metrics aggregates ranks over seeds and writes the table to w. The ranks files must be
// seeds of one model (report.CheckSeeds); with cfg.Models they are grouped into models
// (report.GroupModels), each of which must be, and the table has one row per model.
func Metrics(cfg MetricsConfig, w io.Writer) error {
	switch {
	case len(cfg.Ranks) == 0:
		return fmt.Errorf("no ranks files given")
	case (cfg.TrainLog == "") != (cfg.CurvePlot == ""):
		return fmt.Errorf("a training log (--log) and a curve plot (--curves) go together")
	case cfg.Resamples < 0:
		return fmt.Errorf("--resamples %d: want a number of bootstrap resamples, or 0 for no bootstrap", cfg.Resamples)
	case cfg.Resamples > 0 && cfg.Resamples < report.MinResamples(report.DefaultLevel):
		return fmt.Errorf("--resamples %d: too few for a 95%% percentile interval (each 2.5%% tail must hold a resample): at least %d, or 0 for no bootstrap",
			cfg.Resamples, report.MinResamples(report.DefaultLevel))
	case cfg.Resamples > MaxResamples:
		return fmt.Errorf("--resamples %d: at most %d (each resample redraws every query of every type: %d take about %d bytes per type and minutes of work on a full test split, and a 95%% interval is stable long before)",
			cfg.Resamples, MaxResamples, MaxResamples, MaxResamples*32)
	case cfg.Models && (cfg.Output != "" || cfg.Plot != "" || cfg.Label != "" || cfg.TrainLog != ""):
		return fmt.Errorf("--models prints the side-by-side table only; -o, --plot, --label and --log describe one model: run metrics once per model for them")
	}
	release, err := cfg.checkOutputs()
	if err != nil {
		return err
	}
	defer release()
	if err := checkPlotFlags(outfile.Path{Flag: "--plot", Path: cfg.Plot}, outfile.Path{Flag: "--curves", Path: cfg.CurvePlot}); err != nil {
		return err
	}
	all, err := readRanksRuns(cfg.Ranks)
	if err != nil {
		return err
	}
	ids := make([]report.RunIdentity, len(all))
	for i, r := range all {
		ids[i] = r.id
	}
	opts := report.Options{Resamples: cfg.Resamples, Seed: cfg.Seed}
	if cfg.Resamples == 0 {
		opts.Resamples = -1 // report's "off"
	}
	first := all[0].meta
	if cfg.Models {
		groups, err := report.GroupModels(ids)
		if err != nil {
			return err
		}
		var rows []report.ModelRow
		for _, g := range groups {
			var runs []report.Run
			for _, i := range g.Runs {
				runs = append(runs, all[i].run)
			}
			agg, err := report.Summarize(runs, opts)
			if err != nil {
				return err
			}
			rows = append(rows, report.ModelRow{Label: g.Label, Aggregate: agg})
		}
		fmt.Fprintf(w, "%s %s, %d model(s): %s\n\n", first.Dataset, first.Split, len(groups), strings.Join(cfg.Ranks, " "))
		compare, note := comparable(cfg.Compare, first.Dataset, first.Split)
		fmt.Fprint(w, note)
		return report.WriteMarkdownModels(w, rows, report.TableOptions{Compare: compare, Dataset: first.Dataset})
	}
	if err := report.CheckSeeds(ids); err != nil {
		return err
	}
	var tlog *trainLog
	if cfg.TrainLog != "" {
		// Read and matched with the runs before anything is written.
		if tlog, err = readRunLog(cfg.TrainLog, all); err != nil {
			return err
		}
	}
	runs := make([]report.Run, len(all))
	for i, r := range all {
		runs[i] = r.run
	}
	agg, err := report.Summarize(runs, opts)
	if err != nil {
		return err
	}
	label := cfg.Label
	if label == "" {
		label = first.Model
	}
	// Everything is made before anything is written, and the table is printed last, so
	// that a run that fails writes and prints nothing.
	var table bytes.Buffer
	fmt.Fprintf(&table, "%s %s, %s, %d seed(s): %s\n\n", first.Dataset, first.Split, first.Model, len(runs), strings.Join(cfg.Ranks, " "))
	compare, note := comparable(cfg.Compare, first.Dataset, first.Split)
	table.WriteString(note)
	if err := report.WriteMarkdown(&table, agg, report.TableOptions{Label: label, Compare: compare, Dataset: first.Dataset}); err != nil {
		return err
	}
	var plots []string
	var images []io.WriterTo
	if cfg.Plot != "" {
		img, err := report.DrawMRR(cfg.Plot, agg, report.BarOptions{Compare: compare, Dataset: first.Dataset, Model: first.Model, Label: label,
			Title: fmt.Sprintf("%s %s: MRR per type", first.Dataset, first.Split)})
		if err != nil {
			return err
		}
		plots, images = append(plots, cfg.Plot), append(images, img)
	}
	if tlog != nil {
		img, err := drawTrainLog(tlog.meta, tlog.rows, cfg.CurvePlot)
		if err != nil {
			return err
		}
		plots, images = append(plots, cfg.CurvePlot), append(images, img)
	}
	if cfg.Output != "" {
		meta := artifact.MetricsMeta{Dataset: first.Dataset, Model: first.Model, Split: first.Split,
			Runs: cfg.Ranks, Resamples: agg.Resamples, Level: agg.Level,
			KGDigest: first.KGDigest, TrainFingerprint: first.TrainFingerprint} // the same in every run (CheckSeeds)
		if len(all) == 1 { // one run: keep its identity, for `metrics results`
			id := all[0].id
			meta.Queries, meta.TrainConfig, meta.Seed, meta.CheckpointHash = id.Queries, id.Config, id.Seed, id.CheckpointHash
		}
		if err := artifact.WriteMetrics(cfg.Output, meta, metricsRows(agg)); err != nil {
			return err
		}
	}
	if err := writeOutputs(plots, images); err != nil {
		return err
	}
	_, err = w.Write(table.Bytes())
	return err
}

// checkPlotFlags refuses, before any work, a plot flag whose file name says no format
// we draw (an empty path is no plot).
func checkPlotFlags(plots ...outfile.Path) error {
	for _, p := range plots {
		if p.Path == "" {
			continue
		}
		if err := report.CheckPlotFormat(p.Path); err != nil {
			return fmt.Errorf("%s %s: %w", p.Flag, p.Path, err)
		}
	}
	return nil
}

// writeOutputs writes what a stage made (drawn plots, a CSV) to their paths, all or
// (where one fails before the commits) none.
func writeOutputs(paths []string, outputs []io.WriterTo) error {
	return outfile.WriteAll(paths, func(ws []io.Writer) error {
		for i, o := range outputs {
			if _, err := o.WriteTo(ws[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// trainLog is a train log as read.
type trainLog struct {
	meta artifact.TrainLogMeta
	rows []artifact.TrainLogRow
}

// readRunLog reads the train log that `metrics --log` plots beside the ranks and checks
// that it is the log of one of the runs ranked: the same dataset and model, trained on
// the same KG and train file, with the same configuration and seed, and, where the ranks
// carry the checkpoint's trajectory, the same steps (a run resumed with another --steps
// is one run; one started with it is another). Another seed's or another dataset's
// curves beside these ranks would say something false about them.
func readRunLog(path string, runs []ranksRun) (*trainLog, error) {
	meta, rows, err := artifact.ReadTrainLog(path)
	if err != nil {
		return nil, err
	}
	logSeed := configSeed(meta.Config)
	// why says how the log is another run's; incomplete, that it is the log of a run
	// ranked but lacks some of its steps (a resume went on without it), which is not
	// another run's log and is said as what it is.
	var why, incomplete string
	for _, r := range runs {
		m := r.meta
		switch {
		case meta.Dataset != m.Dataset || meta.Model != m.Model:
			why = fmt.Sprintf("of a %s model on %s, %s ranks a %s model on %s", meta.Model, meta.Dataset, r.id.Path, m.Model, m.Dataset)
		case meta.KGDigest != m.KGDigest || meta.TrainFingerprint != m.TrainFingerprint:
			why = fmt.Sprintf("of a run on KG %.12s and train file %s, %s ranks a model of KG %.12s and train file %s",
				meta.KGDigest, meta.TrainFingerprint, r.id.Path, m.KGDigest, m.TrainFingerprint)
		case logSeed != m.Seed:
			why = fmt.Sprintf("of seed %s, %s ranks a checkpoint of seed %s", logSeed, r.id.Path, m.Seed)
		default:
			diff, err := runConfigDiff(meta.Config, m.TrainConfig)
			if err != nil {
				return nil, fmt.Errorf("%s or %s: %w", path, r.id.Path, err)
			}
			if len(diff) > 0 {
				why = fmt.Sprintf("of another configuration than %s's (%s)", r.id.Path, strings.Join(diff, ", "))
				continue
			}
			// The configurations agree but for what a resume may change (--steps): the
			// steps themselves tell a resumed run from another one.
			if m.CheckpointTrajectory != "" {
				same, how, err := train.SameTrajectory(rows, m.CheckpointTrajectory)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", r.id.Path, err)
				}
				if !same {
					if gap := train.TrajectoryGap(rows, m.CheckpointTrajectory); gap != "" {
						incomplete = fmt.Sprintf("it is of the run %s ranks (configuration, seed, KG and train file), but lacks its train rows of %s "+
							"(the run went on without this log, e.g. with --log \"\"), so its curves cannot be checked against that run", r.id.Path, gap)
						continue
					}
					why = fmt.Sprintf("of another run than the one %s ranks: %s", r.id.Path, how)
					continue
				}
			}
			return &trainLog{meta: meta, rows: rows}, nil
		}
	}
	if incomplete != "" {
		return nil, fmt.Errorf("--log %s is incomplete: %s", path, incomplete)
	}
	return nil, fmt.Errorf("--log %s is not the log of a run ranked: it is the log %s", path, why)
}

// configSeed is the seed of a training configuration (JSON), "" without one.
func configSeed(config string) string {
	var c struct{ Seed *uint64 }
	if err := json.Unmarshal([]byte(config), &c); err != nil || c.Seed == nil {
		return ""
	}
	return strconv.FormatUint(*c.Seed, 10)
}

// runConfigDiff lists the keys in which two training configurations (JSON) of one run
// may not differ: all but those a resumed run may change (train.ResumableKeys: a
// checkpoint ranked at step 1000 and a log that went on to 2000 are one run).
func runConfigDiff(a, b string) ([]string, error) {
	var ma, mb map[string]any
	if err := json.Unmarshal([]byte(a), &ma); err != nil {
		return nil, fmt.Errorf("training configuration: %w", err)
	}
	if err := json.Unmarshal([]byte(b), &mb); err != nil {
		return nil, fmt.Errorf("training configuration: %w", err)
	}
	var diff []string
	for k := range ma {
		if _, ok := mb[k]; !ok {
			mb[k] = nil
		}
	}
	for k, vb := range mb {
		if slices.Contains(train.ResumableKeys, k) {
			continue
		}
		if va := ma[k]; !reflect.DeepEqual(va, vb) {
			diff = append(diff, fmt.Sprintf("%s %v vs %v", k, va, vb))
		}
	}
	slices.Sort(diff)
	return diff, nil
}

// drawTrainLog draws the loss curves (per pool) and the valid MRR curves (the papers' two
// averages, or every type when they are absent) of a train-log artifact, in plotPath's
// format; nothing is written.
func drawTrainLog(meta artifact.TrainLogMeta, rows []artifact.TrainLogRow, plotPath string) (io.WriterTo, error) {
	var tl report.TrainingLog
	path := report.Series{Name: "path pool"}
	other := report.Series{Name: "other pool"}
	valid := map[string]*report.Series{}
	var order []string
	for _, r := range rows {
		switch r.Kind {
		case artifact.LogTrain:
			tl.Steps = append(tl.Steps, int(r.Step))
			tl.Loss = append(tl.Loss, r.Loss)
			path.Steps, path.Values = append(path.Steps, int(r.Step)), append(path.Values, r.LossPath)
			if !math.IsNaN(r.LossOther) {
				other.Steps, other.Values = append(other.Steps, int(r.Step)), append(other.Values, r.LossOther)
			}
		case artifact.LogValid:
			s := valid[r.Type]
			if s == nil {
				s = &report.Series{Name: "valid MRR " + r.Type}
				valid[r.Type] = s
				order = append(order, r.Type)
			}
			s.Steps, s.Values = append(s.Steps, int(r.Step)), append(s.Values, r.MRR)
		}
	}
	tl.Pools = []report.Series{path}
	if len(other.Steps) > 0 {
		tl.Pools = append(tl.Pools, other)
	}
	averages := []string{"AVG-EPFO", "AVG-neg"}
	if valid["AVG-EPFO"] == nil {
		averages = order
	}
	for _, name := range averages {
		if s := valid[name]; s != nil {
			tl.Valid = append(tl.Valid, *s)
		}
	}
	return report.DrawTraining(plotPath, tl, report.CurveOptions{Title: fmt.Sprintf("%s, %s: training", meta.Dataset, meta.Model)})
}

func metricsRows(a *report.Aggregate) []artifact.MetricsRow {
	conv := func(s report.Stats) [4]artifact.MetricStat {
		var out [4]artifact.MetricStat
		for i, m := range []report.Metric{report.MRR, report.Hits1, report.Hits3, report.Hits10} {
			st := s.Get(m)
			out[i] = artifact.MetricStat{Mean: st.Mean, Std: st.Std, Lo: st.Lo, Hi: st.Hi}
		}
		return out
	}
	var rows []artifact.MetricsRow
	for _, t := range a.Types {
		s := conv(t.Stats)
		rows = append(rows, artifact.MetricsRow{Kind: "type", Name: t.Type, Queries: int64(t.Queries), Seeds: int32(a.Seeds),
			MRR: s[0], H1: s[1], H3: s[2], H10: s[3]})
	}
	for _, g := range []struct {
		name string
		st   report.GroupStats
	}{{"EPFO", a.EPFO}, {"negation", a.Negation}} {
		if !g.st.Complete {
			continue
		}
		s := conv(g.st.Stats)
		rows = append(rows, artifact.MetricsRow{Kind: "average", Name: g.name, Seeds: int32(a.Seeds), MRR: s[0], H1: s[1], H3: s[2], H10: s[3]})
	}
	return rows
}
