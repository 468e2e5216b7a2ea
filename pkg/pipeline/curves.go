package pipeline

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/query"
)

// CurvesConfig is what `metrics curves` does: a run's training curves from its train logs
// alone (no ranks needed), also while the run goes on (train rewrites its log atomically
// at each checkpoint, so a read sees the last complete one).
type CurvesConfig struct {
	Logs []string // train-log artifacts
	// Points is how many windows the loss is averaged over in the printed table (the CSV
	// has every step).
	Points int
	CSV    string // every row of every log as CSV; "" for none
	Plot   string // the curves of the one log (.png or .svg); "" for none
}

// curveLog is one train log as read.
type curveLog struct {
	path string
	meta artifact.TrainLogMeta
	rows []artifact.TrainLogRow
}

// Curves prints each log's loss curve (averaged over Points windows of steps) and its
// validation MRR (the papers' two averages and every type) at each validation to w, and
// writes the CSV and the plot when asked.
func Curves(cfg CurvesConfig, w io.Writer) error {
	switch {
	case len(cfg.Logs) == 0:
		return fmt.Errorf("no train log given")
	case cfg.Points < 1:
		return fmt.Errorf("--points %d: want at least 1 window", cfg.Points)
	case cfg.Plot != "" && len(cfg.Logs) != 1:
		return fmt.Errorf("--plot draws one run's curves: give one train log (%d given)", len(cfg.Logs))
	}
	var inputs []outfile.Path
	for _, l := range cfg.Logs {
		inputs = append(inputs, outfile.Path{Flag: "train log", Path: l})
	}
	release, err := outfile.Claim(inputs, []outfile.Path{{Flag: "the curves on", Path: "-"}, {Flag: "--csv", Path: cfg.CSV},
		{Flag: "--plot", Path: cfg.Plot}})
	if err != nil {
		return err
	}
	defer release()
	if err := checkPlotFlags(outfile.Path{Flag: "--plot", Path: cfg.Plot}); err != nil {
		return err
	}
	if err := outfile.Distinct(cfg.Logs); err != nil {
		return err
	}
	logs := make([]curveLog, len(cfg.Logs))
	for i, p := range cfg.Logs {
		meta, rows, err := artifact.ReadTrainLog(p)
		if err != nil {
			return err
		}
		logs[i] = curveLog{path: p, meta: meta, rows: rows}
		for _, l := range logs[:i] {
			if m := l.meta; m.Dataset == meta.Dataset && m.Model == meta.Model && m.Config == meta.Config &&
				m.KGDigest == meta.KGDigest && m.TrainFingerprint == meta.TrainFingerprint {
				return fmt.Errorf("%s and %s are logs of one run (the same configuration, seed, KG and train queries): its curves would be listed twice", l.path, p)
			}
		}
	}
	// Everything is made before anything is written, and the tables are printed last, so
	// that a run that fails writes and prints nothing.
	var tables bytes.Buffer
	for _, l := range logs {
		if err := writeCurveTables(&tables, l, cfg.Points); err != nil {
			return err
		}
	}
	var paths []string
	var files []io.WriterTo
	if cfg.CSV != "" {
		var buf bytes.Buffer
		if err := writeCurvesCSV(&buf, logs); err != nil {
			return err
		}
		paths, files = append(paths, cfg.CSV), append(files, &buf)
	}
	if cfg.Plot != "" {
		img, err := drawTrainLog(logs[0].meta, logs[0].rows, cfg.Plot)
		if err != nil {
			return err
		}
		paths, files = append(paths, cfg.Plot), append(files, img)
	}
	if err := writeOutputs(paths, files); err != nil {
		return err
	}
	_, err = w.Write(tables.Bytes())
	return err
}

// lossWindow is the mean of the losses of the train rows of steps [From, To].
type lossWindow struct {
	From, To              int64
	Loss, Path, Other, LR float64
}

// lossWindows averages the train rows (in step order) over n windows of about equal
// numbers of steps; fewer when there are fewer rows. A NaN (the other pool's loss where a
// run has no other pool) stays NaN.
func lossWindows(rows []artifact.TrainLogRow, n int) []lossWindow {
	var train []artifact.TrainLogRow
	for _, r := range rows {
		if r.Kind == artifact.LogTrain {
			train = append(train, r)
		}
	}
	slices.SortStableFunc(train, func(a, b artifact.TrainLogRow) int { return int(a.Step - b.Step) })
	n = min(n, len(train))
	out := make([]lossWindow, 0, n)
	for k := range n {
		lo, hi := k*len(train)/n, (k+1)*len(train)/n
		win := lossWindow{From: train[lo].Step, To: train[hi-1].Step, LR: train[hi-1].LR}
		for _, r := range train[lo:hi] {
			win.Loss += r.Loss
			win.Path += r.LossPath
			win.Other += r.LossOther
		}
		c := float64(hi - lo)
		win.Loss, win.Path, win.Other = win.Loss/c, win.Path/c, win.Other/c
		out = append(out, win)
	}
	return out
}

func writeCurveTables(w io.Writer, l curveLog, points int) error {
	wins := lossWindows(l.rows, points)
	fmt.Fprintf(w, "%s: %s %s, %d train steps logged\n\n", l.path, l.meta.Dataset, l.meta.Model, countKind(l.rows, artifact.LogTrain))
	if len(wins) > 0 {
		fmt.Fprintln(w, "| steps | loss | path pool | other pool | lr (last) |")
		fmt.Fprintln(w, "|---|--:|--:|--:|--:|")
		for _, v := range wins {
			fmt.Fprintf(w, "| %d–%d | %.4f | %.4f | %s | %.3g |\n", v.From, v.To, v.Loss, v.Path, fmtNaN(v.Other, "%.4f"), v.LR)
		}
		fmt.Fprintln(w)
	}
	// Validation: one row per validation step, one column per type (the papers' order),
	// the averages first.
	steps := []int64{}
	mrr := map[int64]map[string]float64{}
	var types []string
	for _, r := range l.rows {
		if r.Kind != artifact.LogValid {
			continue
		}
		if mrr[r.Step] == nil {
			mrr[r.Step] = map[string]float64{}
			steps = append(steps, r.Step)
		}
		mrr[r.Step][r.Type] = r.MRR
		if !slices.Contains(types, r.Type) {
			types = append(types, r.Type)
		}
	}
	if len(steps) == 0 {
		_, err := fmt.Fprintf(w, "No validation logged yet.\n\n")
		return err
	}
	slices.Sort(steps)
	slices.SortStableFunc(types, func(a, b string) int { return validOrder(a) - validOrder(b) })
	fmt.Fprintf(w, "| valid MRR ×100, step | %s |\n", strings.Join(types, " | "))
	fmt.Fprintf(w, "|---|%s\n", strings.Repeat("--:|", len(types)))
	for _, s := range steps {
		cells := make([]string, len(types))
		for i, t := range types {
			if v, ok := mrr[s][t]; ok {
				cells[i] = fmtNaN(100*v, "%.2f")
			} else {
				cells[i] = "–"
			}
		}
		fmt.Fprintf(w, "| %d | %s |\n", s, strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
	return writeBest(w, l.meta)
}

// writeBest says, for a run that compares its validations (train --keep-best,
// --patience), which was the best and whether the run stopped early (the log's best
// and early_stop metadata).
func writeBest(w io.Writer, meta artifact.TrainLogMeta) error {
	if meta.Best == "" {
		return nil
	}
	var best struct {
		Metric string  `json:"metric"`
		Step   int64   `json:"step"`
		Value  float64 `json:"value"`
		Since  int     `json:"since"`
	}
	if err := json.Unmarshal([]byte(meta.Best), &best); err != nil {
		return fmt.Errorf("the log's best metadata: %w", err)
	}
	fmt.Fprintf(w, "Best validation by %s: %.2f (×100) after step %d, %d validation(s) since.", best.Metric, 100*best.Value, best.Step, best.Since)
	if meta.EarlyStop != "" {
		var stop struct {
			Step     int64 `json:"step"`
			Patience int   `json:"patience"`
		}
		if err := json.Unmarshal([]byte(meta.EarlyStop), &stop); err != nil {
			return fmt.Errorf("the log's early_stop metadata: %w", err)
		}
		fmt.Fprintf(w, " Stopped early after step %d: %d validations without improvement.", stop.Step, stop.Patience)
	}
	_, err := fmt.Fprint(w, "\n\n")
	return err
}

// validOrder puts the averages first, then the papers' columns, then other types.
func validOrder(t string) int {
	switch t {
	case "AVG-EPFO":
		return -3
	case "AVG-neg":
		return -2
	case "AVG":
		return -1
	}
	if i := slices.Index(query.EvalTypes, t); i >= 0 {
		return i
	}
	return len(query.EvalTypes)
}

func countKind(rows []artifact.TrainLogRow, kind string) int {
	n := 0
	for _, r := range rows {
		if r.Kind == kind {
			n++
		}
	}
	return n
}

func fmtNaN(v float64, format string) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

// writeCurvesCSV writes every row of every log, with the log's path, dataset and model:
// what pandas, R or a spreadsheet read. NaN is written as an empty cell.
func writeCurvesCSV(w io.Writer, logs []curveLog) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"log", "dataset", "model", "step", "kind", "type", "lr", "loss", "loss_path", "loss_other",
		"mrr", "hits1", "hits3", "hits10", "queries", "elapsed_s"})
	num := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	for _, l := range logs {
		for _, r := range l.rows {
			cw.Write([]string{l.path, l.meta.Dataset, l.meta.Model, strconv.FormatInt(r.Step, 10), r.Kind, r.Type, num(r.LR),
				num(r.Loss), num(r.LossPath), num(r.LossOther), num(r.MRR), num(r.Hits1), num(r.Hits3), num(r.Hits10),
				strconv.FormatInt(r.Queries, 10), num(r.ElapsedS)})
		}
	}
	cw.Flush()
	return cw.Error()
}
