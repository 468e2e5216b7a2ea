package sample

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/kg"
)

// Source names a dataset folder and how to read it.
type Source struct {
	Dir     string
	Format  kg.Format
	Dataset string // the dataset's name in the artifact; default: the folder's name
	// Warnings is where warnings go (rows dropped, a count not met, imported queries
	// without a hard answer) whatever the progress log: a quiet run still says what it
	// changed or doubts. Nil: the progress log.
	Warnings io.Writer
}

// warnings is where s's warnings go, given the progress log.
func (s Source) warnings(log io.Writer) io.Writer {
	switch {
	case s.Warnings != nil:
		return s.Warnings
	case log != nil:
		return log
	}
	return io.Discard
}

// Load reads the dataset and reports its format note to log (nil: nowhere) and its
// warnings to s.Warnings (nil: log).
func (s Source) Load(log io.Writer) (*kg.Dataset, error) {
	warn := s.warnings(log)
	if log == nil {
		log = io.Discard
	}
	d, err := kg.Load(s.Dir, s.Format)
	if err != nil {
		return nil, err
	}
	if s.Dataset != "" {
		d.Name = s.Dataset
	}
	if err := kg.CheckName(d.Name); err != nil {
		if s.Dataset != "" {
			return nil, fmt.Errorf("--dataset %q: %w", s.Dataset, err)
		}
		return nil, fmt.Errorf("%s: the folder's name, the dataset's name by default: %w; name it with --dataset", s.Dir, err)
	}
	if d.FormatNote != "" {
		fmt.Fprintln(log, d.FormatNote)
	}
	for _, w := range d.Warnings {
		fmt.Fprintln(warn, "warning:", w)
	}
	return d, nil
}

// GenerateToFile samples split of src with opts and writes a queries artifact to out
// ("-" for an IPC stream on stdout), with progress on log (nil: none). On any error
// nothing is left at out.
func GenerateToFile(ctx context.Context, src Source, split string, opts Options, out string, log io.Writer) error {
	if m := opts.ShardMargin; m < 0 || math.IsNaN(m) || math.IsInf(m, 0) {
		return fmt.Errorf("--shard-margin %v: want a fraction of at least 0 (0.5: sample 50%% more than the shard's share)", m)
	}
	release, err := checkOutput(src, "", out)
	if err != nil {
		return err
	}
	defer release()
	d, g, log, err := src.graphs(split, log)
	if err != nil {
		return err
	}
	opts.Dataset, opts.Log = d.Name, log
	if opts.Warnings == nil {
		opts.Warnings = src.warnings(log)
	}
	meta := queriesMeta(d, split)
	if opts.Shard.Whole() {
		return writeArtifact(meta, out, func(emit func(*Query) error) error {
			_, err := Generate(ctx, g, opts, emit)
			return err
		})
	}
	return generateShard(ctx, g, opts, meta, out)
}

// generateShard samples shard opts.Shard and writes its file: its candidates with their
// attempts, and in the metadata the run's options (sampling) and what the shard covered
// of each type (shard_coverage), which `sample merge` reads. The candidates wait in a
// temporary file (spill) until the coverage, the metadata, is known.
func generateShard(ctx context.Context, g *Graphs, opts Options, meta artifact.QueriesMeta, out string) error {
	if opts.ShardMargin == 0 {
		opts.ShardMargin = DefaultShardMargin
	}
	sp, err := newSpill("")
	if err != nil {
		return err
	}
	defer sp.close()
	stats, err := Generate(ctx, g, opts, sp.add)
	if err != nil {
		return err
	}
	if sp.rows == 0 {
		// An artifact holds at least one row; a shard with nothing to hold is a cut too fine.
		return fmt.Errorf("--shard %s: this shard holds no query (every type has fewer queries than the %d shards cut): use fewer shards",
			opts.Shard, opts.Shard.Count)
	}
	cov := coverage{BlockSize: attemptsPerBlock, Margin: opts.ShardMargin}
	for _, st := range stats {
		cov.Types = append(cov.Types, typeCoverage{Type: st.Type, Count: st.Count, Blocks: st.Blocks, Rows: st.Queries, Stalled: st.Stalled})
		if st.Type == "1p" {
			cov.Types[len(cov.Types)-1].Rows = st.Written
		}
	}
	meta.Shard, meta.Sampling, meta.Coverage = opts.Shard, samplingRun(opts), cov.String()
	w, err := artifact.CreateQueries(out, meta)
	if err != nil {
		return err
	}
	defer w.Abort() // no-op after a successful Close
	if err := sp.each(w.WriteShard); err != nil {
		return err
	}
	return w.Close()
}

// samplingRun describes the sampling run a shard belongs to (the queries metadata
// "sampling" of shard files): everything but the shard and the number of workers that
// changes the queries, so that `sample merge` refuses shards of different runs.
func samplingRun(opts Options) string {
	b, err := json.Marshal(struct {
		Seed       uint64         `json:"seed"`
		Types      []string       `json:"types"`
		Counts     map[string]int `json:"counts"`
		MaxAnswers int            `json:"max_answers"`
	}{opts.Seed, opts.Types, opts.Counts, opts.MaxAnswers})
	if err != nil {
		panic(err) // a struct of plain values always marshals
	}
	return string(b)
}

// ImportToFile imports a BetaE query pickle for split of src and writes a queries artifact.
func ImportToFile(src Source, split, pickle, out string, log io.Writer) error {
	release, err := checkOutput(src, pickle, out)
	if err != nil {
		return err
	}
	defer release()
	d, g, log, err := src.graphs(split, log)
	if err != nil {
		return err
	}
	warn := src.warnings(log)
	return writeArtifact(queriesMeta(d, split), out, func(emit func(*Query) error) error {
		stats, err := ImportBetaE(pickle, g, emit)
		written, unranked := 0, 0
		var byType []string
		for _, st := range stats {
			fmt.Fprintf(log, "%s %s\n", split, st)
			written += st.Queries
			if n := st.Rejected[rejectNoHard]; n > 0 {
				unranked += n
				byType = append(byType, fmt.Sprintf("%s %d of %d", st.Type, n, st.Queries))
			}
		}
		switch {
		case err != nil:
			return err
		case written == 0:
			// An empty queries file would train on nothing or rank nothing, silently.
			return fmt.Errorf("%s: the pickle holds no queries (of any structure): nothing to import", pickle)
		case unranked == written:
			return fmt.Errorf("%s: none of its %d queries has a hard answer on the %s split of %s, so there is nothing to rank: the pickle is of another split or KG",
				pickle, written, split, d.Name)
		case unranked > 0:
			// Kept (their easy answers are right), but BetaE sampled every query with a hard
			// answer, so a pickle of this split and KG has none without.
			fmt.Fprintf(warn, "warning: %s: %d of its %d queries have no hard answer on the %s split of %s (%s): BetaE's queries all have one; is the pickle this split's and this KG's?\n",
				pickle, unranked, written, split, d.Name, strings.Join(byType, ", "))
		}
		return nil
	})
}

// graphs loads the dataset and builds the split's graphs; log nil becomes io.Discard.
func (s Source) graphs(split string, log io.Writer) (*kg.Dataset, *Graphs, io.Writer, error) {
	if log == nil {
		log = io.Discard
	}
	d, err := s.Load(log)
	if err != nil {
		return nil, nil, log, err
	}
	g, err := NewGraphs(d, split)
	return d, g, log, err
}

func queriesMeta(d *kg.Dataset, split string) artifact.QueriesMeta {
	return artifact.QueriesMeta{
		Split: split, Dataset: d.Name, NumEntities: d.NumEntities, NumRelations: d.NumRelations,
		EntitiesDigest: d.EntityDigest(), KGDigest: d.Digest(),
	}
}

func writeArtifact(meta artifact.QueriesMeta, out string, produce func(emit func(*Query) error) error) error {
	w, err := artifact.CreateQueries(out, meta)
	if err != nil {
		return err
	}
	defer w.Abort() // no-op after a successful Close
	var id int64
	err = produce(func(q *Query) error {
		row := artifact.Query{ID: id, Type: q.Type, Structure: q.Structure.String(),
			Anchors: q.Anchors, Relations: q.Relations, Easy: q.Easy, Hard: q.Hard}
		id++
		return w.Write(&row)
	})
	if err != nil {
		return err
	}
	return w.Close()
}

// SplitList splits a comma-separated list at the top level only, so structure notations,
// which contain commas inside parentheses, can be list items.
func SplitList(s string) []string {
	var items []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				items = append(items, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if last := strings.TrimSpace(s[start:]); last != "" || len(items) > 0 {
		items = append(items, last)
	}
	return items
}

// ParseCounts reads "TYPE=N,TYPE=N" (TYPE a name or a structure notation).
func ParseCounts(s string) (map[string]int, error) {
	counts := map[string]int{}
	items := SplitList(s)
	if len(items) == 0 {
		//lint:ignore ST1005 the "..." is the syntax's, not punctuation
		return nil, fmt.Errorf("--count %q: no counts; want TYPE=N,...", s)
	}
	for _, item := range items {
		eq := strings.LastIndexByte(item, '=')
		if eq < 0 {
			return nil, fmt.Errorf("--count %q: want TYPE=N", item)
		}
		n, err := strconv.Atoi(strings.TrimSpace(item[eq+1:]))
		if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(strings.TrimSpace(item[eq+1:]), "-") {
			return nil, fmt.Errorf("--count %q: %s is too large (at most %d)", item, strings.TrimSpace(item[eq+1:]), math.MaxInt)
		}
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--count %q: %q is not a non-negative integer", item, item[eq+1:])
		}
		typ := strings.TrimSpace(item[:eq])
		if _, err := resolveType(typ); err != nil {
			return nil, fmt.Errorf("--count %q: %w", item, err)
		}
		if _, dup := counts[typ]; dup {
			return nil, fmt.Errorf("--count %q: %s is given twice", item, typ)
		}
		counts[typ] = n
	}
	return counts, nil
}
