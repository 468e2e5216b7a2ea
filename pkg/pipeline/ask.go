package pipeline

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/rocone/rocone/pkg/answer"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/query"
)

// AskConfig is what `rank --ask` does: rank every entity for queries written by names
// or ids (query.ParseAsk) and print each one's top K, each entity marked as an answer
// already known on the graph or a prediction.
type AskConfig struct {
	Checkpoint string
	Data       string // dataset folder: names, labels and the known graph (required)
	Ask        string // one query; "" for none
	AskFile    string // a file of queries, one a line, # comments ("-" for stdin); "" for none
	TopK       int    // entities listed per query (≥ 1)
	// Known is the graph whose answers count as known: "train" (the graph the model was
	// trained on) or "train+valid".
	Known string
	// ExcludeKnown lists predictions only: the top K among entities that are not known
	// answers.
	ExcludeKnown bool
	Output       string    // answers artifact; "" for none, "-" for stdout
	Stdout       io.Writer // the tables; stderr's place when Output is "-"
	Kernels      compute.Backend
	Workers      int
	Batch        int
	Log          io.Writer
	// Warnings is where warnings go whatever Log (a checkpoint without lineage, a
	// folder without names): -q drops progress, never warnings. Nil: Log.
	Warnings io.Writer
}

// Known graphs.
const (
	KnownTrain      = "train"
	KnownTrainValid = "train+valid"
)

func (cfg *AskConfig) check() error {
	switch {
	case cfg.Ask == "" && cfg.AskFile == "":
		return fmt.Errorf("no question: give --ask QUERY or --ask-file FILE")
	case cfg.Data == "":
		return fmt.Errorf("--ask needs --data DIR: the dataset the checkpoint was trained on, for its names and its known answers")
	case cfg.TopK < 1:
		return fmt.Errorf("--top %d: want a positive number of entities to list", cfg.TopK)
	case cfg.Known != KnownTrain && cfg.Known != KnownTrainValid:
		return fmt.Errorf("--known %q: want %s or %s", cfg.Known, KnownTrain, KnownTrainValid)
	case cfg.Batch < 0:
		return fmt.Errorf("--batch %d: want a positive number of queries", cfg.Batch)
	case cfg.Workers < 0:
		return fmt.Errorf("--workers %d: want a positive number of goroutines (leave it out for every core)", cfg.Workers)
	}
	return nil
}

// claimOutputs checks the outputs against the inputs and claims them for the run
// (outfile.Claim). The tables go to stdout unless the artifact does: an output too.
func (cfg *AskConfig) claimOutputs() (release func(), err error) {
	inputs := []outfile.Path{{Flag: "--checkpoint", Path: cfg.Checkpoint}, {Flag: "--ask-file", Path: cfg.AskFile}}
	inputs = append(inputs, outfile.DirFiles("--data", cfg.Data)...)
	outputs := []outfile.Path{{Flag: "-o", Path: cfg.Output}}
	if cfg.Output != "-" {
		outputs = append(outputs, outfile.Path{Flag: "the answers on", Path: "-"})
	}
	return outfile.Claim(inputs, outputs)
}

// question is one asked query: where it was written, as written, parsed and resolved.
type question struct {
	source   string // "--ask" or FILE:LINE
	ask      *query.Ask
	grounded *query.Grounded
	known    *answer.Set
	top      []int32
	scores   []float32
	err      error // a NaN score (eval.TopEntities)
}

// readQuestions parses the --ask query and the lines of --ask-file, every one before any
// model is loaded; a malformed one is an error naming its source, all of them at once.
func readQuestions(cfg *AskConfig) ([]*question, error) {
	var qs []*question
	var errs []error
	add := func(source, text string) {
		a, err := query.ParseAsk(text)
		if err == nil {
			// A structure without a DNF (a negated union, too many branches) is refused
			// here too, with the model not loaded yet.
			if _, derr := a.Structure.DNF(); derr != nil {
				err = fmt.Errorf("query %q: %w", text, derr)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", source, err))
			return
		}
		qs = append(qs, &question{source: source, ask: a})
	}
	if cfg.Ask != "" {
		add("--ask", cfg.Ask)
	}
	if cfg.AskFile != "" {
		name := displayPath(cfg.AskFile)
		var r io.Reader = os.Stdin
		if cfg.AskFile != "-" {
			f, err := os.Open(cfg.AskFile)
			if err != nil {
				return nil, fmt.Errorf("--ask-file: %w", err)
			}
			defer f.Close()
			r = f
		}
		const maxLine = 1 << 20
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<16), maxLine)
		line, before := 0, len(qs)
		for sc.Scan() {
			line++
			if line == 1 && (strings.HasPrefix(sc.Text(), "\xff\xfe") || strings.HasPrefix(sc.Text(), "\xfe\xff")) {
				// Windows PowerShell's > and Notepad's "Unicode" write UTF-16, whose every
				// line would otherwise be refused byte by byte.
				return nil, fmt.Errorf("%s: UTF-16 text (it starts with a UTF-16 byte-order mark): write the queries as UTF-8", name)
			}
			text := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff"))
			if text == "" || strings.HasPrefix(text, "#") {
				continue
			}
			add(fmt.Sprintf("%s:%d", name, line), text)
		}
		switch err := sc.Err(); {
		case errors.Is(err, bufio.ErrTooLong):
			return nil, fmt.Errorf("%s:%d: a line longer than %d bytes (one query a line)", name, line+1, maxLine)
		case errors.Is(err, syscall.EISDIR):
			return nil, fmt.Errorf("--ask-file %s: a folder, not a file of queries", name)
		case err != nil:
			return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
		}
		if len(qs) == before && len(errs) == 0 {
			return nil, fmt.Errorf("%s: no query in it (one a line; blank lines and lines starting with # are skipped)", name)
		}
	}
	return qs, joinErrors(errs)
}

// joinErrors joins errors one a line, at most 20 of them.
func joinErrors(errs []error) error {
	const most = 20
	if len(errs) > most {
		errs = append(errs[:most:most], fmt.Errorf("and %d more", len(errs)-most))
	}
	return errors.Join(errs...)
}

// resolver finds an asked query's entities and relations in a dataset.
type resolver struct{ l *kg.Lookup }

func (r resolver) Entity(ref query.Ref) (int32, error) {
	if ref.IsID {
		return r.l.EntityID(ref.ID)
	}
	return r.l.Entity(ref.Name)
}

func (r resolver) Relation(ref query.Ref) (int32, error) {
	if ref.IsID {
		return r.l.RelationID(ref.ID)
	}
	return r.l.Relation(ref.Name)
}

// Ask ranks every entity for each question with the checkpoint, through eval.RankQueries
// as `rank` does, and prints each question's K best entities: id, name, label, score, and
// whether the entity is already an answer of the query on the known graph (pkg/answer
// evaluates the query there) or a prediction. With Output it also writes them as an
// answers artifact.
func Ask(cfg AskConfig) error {
	if err := cfg.check(); err != nil {
		return err
	}
	release, err := cfg.claimOutputs()
	if err != nil {
		return err
	}
	defer release()
	qs, err := readQuestions(&cfg)
	if err != nil {
		return err
	}
	l, err := loadModel(cfg.Checkpoint, cfg.Kernels)
	if err != nil {
		return err
	}
	d, err := datasetFor(cfg.Data, l, warnTo(cfg.Warnings, cfg.Log))
	if err != nil {
		return err
	}
	look := resolver{kg.NewLookup(d)}
	var errs []error
	for _, q := range qs {
		g, err := q.ask.Resolve(look)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", q.source, err))
			continue
		}
		q.grounded = g
	}
	if err := joinErrors(errs); err != nil {
		return err
	}

	parts := [][]kg.Triple{d.Train}
	if cfg.Known == KnownTrainValid {
		parts = append(parts, d.Valid)
	}
	engine := answer.NewEngine(kg.NewGraph(d.NumEntities, d.NumRelations, parts...))
	rq := make([]eval.RankQuery, len(qs))
	for i, q := range qs {
		q.known = engine.Answers(q.grounded)
		rq[i] = eval.RankQuery{Type: q.grounded.Structure.Name(), Query: *q.grounded}
	}
	opts := eval.RankOptions{Workers: cfg.Workers, Batch: min(cmp.Or(cfg.Batch, eval.DefaultRankBatch), len(rq)),
		Scores: func(i int, scores []float32) {
			var skip func(int32) bool
			if cfg.ExcludeKnown {
				skip = qs[i].known.Contains
			}
			qs[i].top, qs[i].scores, qs[i].err = eval.TopEntities(scores, cfg.TopK, skip)
		}}
	if _, err := eval.RankQueries(context.Background(), l.model, rq, opts); err != nil {
		return err
	}
	for _, q := range qs {
		if q.err != nil {
			errs = append(errs, fmt.Errorf("%s: query %q: %w (of %s)", q.source, q.ask.Text, q.err, displayPath(cfg.Checkpoint)))
		}
	}
	if err := joinErrors(errs); err != nil {
		return err
	}

	if cfg.Output != "" {
		if err := writeAnswers(&cfg, l, d, qs); err != nil {
			return err
		}
	}
	out := cfg.Stdout
	if cfg.Output == "-" || out == nil {
		out = os.Stderr
	}
	return printAnswers(out, &cfg, d, qs)
}

// writeAnswers writes the answers artifact.
func writeAnswers(cfg *AskConfig, l *loaded, d *kg.Dataset, qs []*question) error {
	rows := 0
	for _, q := range qs {
		rows += len(q.top)
	}
	if rows == 0 {
		return fmt.Errorf("-o %s: no entity to write: every entity is a known answer of every question (--exclude-known)", cfg.Output)
	}
	w, err := artifact.CreateAnswers(cfg.Output, artifact.AnswersMeta{
		Model: string(l.model.Config.Variant), Dataset: d.Name, NumEntities: d.NumEntities, NumQuestions: len(qs),
		Checkpoint: cfg.Checkpoint, CheckpointHash: l.hash, TopK: cfg.TopK, Known: cfg.Known, ExcludeKnown: cfg.ExcludeKnown,
	})
	if err != nil {
		return err
	}
	defer w.Abort()
	for i, q := range qs {
		for k, e := range q.top {
			name, label := entityNames(d, e)
			if err := w.Write(&artifact.Answer{Question: int32(i), Query: q.ask.Text, Grounded: q.grounded.String(), Type: q.grounded.Structure.Name(),
				Position: int32(k + 1), Entity: e, Name: name, Label: label, Score: q.scores[k], Known: q.known.Contains(e),
				KnownAnswers: int32(q.known.Len())}); err != nil {
				return err
			}
		}
	}
	return w.Close()
}

// entityNames are an entity's name and label, "" where the dataset has none.
func entityNames(d *kg.Dataset, e int32) (name, label string) {
	if d.EntityNames != nil {
		name = d.EntityNames[e]
	}
	if d.EntityLabels != nil {
		label = d.EntityLabels[e]
	}
	return name, label
}

// printAnswers prints one table per question: a heading with the query as written and
// as ids, then its top K.
func printAnswers(out io.Writer, cfg *AskConfig, d *kg.Dataset, qs []*question) error {
	bw := bufio.NewWriter(out)
	for i, q := range qs {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		n := q.known.Len()
		fmt.Fprintf(bw, "question %d (%s): %s\n", i+1, q.source, q.ask.Text)
		fmt.Fprintf(bw, "  %s %s = %s; %d known %s on %s", q.grounded.Structure.Name(), q.grounded, byNames(d, q.grounded), n, pluralS(n, "answer"), cfg.Known)
		if cfg.ExcludeKnown {
			fmt.Fprint(bw, " (left out)")
		}
		fmt.Fprintln(bw)
		if len(q.top) == 0 {
			fmt.Fprintln(bw, "  no entity left: every entity is a known answer")
			continue
		}
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		head := "  #\tid\t"
		if d.EntityNames != nil {
			head += "name\t"
		}
		if d.EntityLabels != nil {
			head += "label\t"
		}
		fmt.Fprintln(tw, head+"score\tstatus")
		for k, e := range q.top {
			name, label := entityNames(d, e)
			line := fmt.Sprintf("  %d\t%d\t", k+1, e)
			if d.EntityNames != nil {
				line += name + "\t"
			}
			if d.EntityLabels != nil {
				line += label + "\t"
			}
			status := "predicted"
			if q.known.Contains(e) {
				status = "known"
			}
			fmt.Fprintf(tw, "%s%.4f\t%s\n", line, q.scores[k], status)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func pluralS(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// byNames writes a grounded query with the dataset's entity and relation names (ids
// where it has none): what the asked names were resolved to.
func byNames(d *kg.Dataset, g *query.Grounded) string {
	a := &query.Ask{Structure: g.Structure, Anchors: make([]query.Ref, len(g.Anchors)), Relations: make([]query.Ref, len(g.Relations))}
	for i, e := range g.Anchors {
		a.Anchors[i] = query.Ref{ID: e, IsID: true}
		if d.EntityNames != nil {
			a.Anchors[i] = query.Ref{Name: d.EntityNames[e]}
		}
	}
	for i, r := range g.Relations {
		a.Relations[i] = query.Ref{ID: r, IsID: true}
		if d.RelationNames != nil {
			a.Relations[i] = query.Ref{Name: d.RelationNames[r]}
		}
	}
	return a.String()
}
