// Package kg loads knowledge-graph datasets and holds their graphs in CSR form.
//
// A dataset folder has the layout of BetaE's data: train, valid and test triples
// (train.tsv, valid.tsv, test.tsv, each optionally gzipped; BetaE's train.txt works too)
// and optional name tables entities.tsv and relations.tsv ("id<TAB>name") and
// entity_labels.tsv (human-readable labels: "id<TAB>label", or "name<TAB>label" for a
// dataset of names; FB15k-237's entity names are Freebase ids, its labels words). Triples come in
// one of two formats:
//
//   - ids: "head<TAB>relation<TAB>tail" integers in BetaE's ids, where relation 2k is a
//     forward relation and 2k+1 its inverse, and every fact is listed in both directions;
//   - names: raw "head<TAB>relation<TAB>tail" strings. Ids are assigned BetaE's way: entities
//     and relations numbered in order of first appearance in train (head before tail),
//     relation k becoming 2k (forward) and 2k+1 (inverse), and both directions added.
//
// In both formats, valid and test facts whose entities (or relation) never occur in train
// are dropped and counted in a warning, as BetaE does.
package kg

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Triple is a directed fact (head, relation, tail) in ids.
type Triple struct{ Head, Relation, Tail int32 }

// Format is the encoding of the triple files.
type Format string

const (
	FormatAuto  Format = "auto"  // ids if the first train line is three integers, else names
	FormatIDs   Format = "ids"   // BetaE ids, both directions listed
	FormatNames Format = "names" // raw strings
)

// Splits in the order BetaE stacks their graphs.
var Splits = []string{"train", "valid", "test"}

// Dataset is a loaded KG: the directed triples of each split (both directions included)
// and, when known, the names of entities and relations.
type Dataset struct {
	Name          string
	Dir           string
	NumEntities   int
	NumRelations  int // directed relation ids, inverses included (always even)
	Train         []Triple
	Valid         []Triple
	Test          []Triple
	EntityNames   []string // nil when unknown
	RelationNames []string // nil when unknown
	// EntityLabels are human-readable names from entity_labels.tsv, by entity id ("" for
	// an entity the table leaves out); nil without the file. They are for people (rank
	// --ask finds entities by them and prints them), not part of the KG's identity.
	EntityLabels []string
	Warnings     []string
	// FormatNote says which triple format auto-detection chose and why, in one line
	// naming the file ("data/x/train.tsv: format ids (first line is three integers)");
	// empty when the format was given. Stages print it on stderr.
	FormatNote string
}

// Split returns the triples of a split by name.
func (d *Dataset) Split(name string) ([]Triple, error) {
	switch name {
	case "train":
		return d.Train, nil
	case "valid":
		return d.Valid, nil
	case "test":
		return d.Test, nil
	}
	return nil, fmt.Errorf("unknown split %q (want train, valid or test)", name)
}

// folderName is the base name of the folder dir, resolved against the working folder so
// that "." and ".." name the folder they stand for.
func folderName(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Base(filepath.Clean(dir))
}

// Load reads the dataset folder dir. The dataset's name is the folder's base name.
func Load(dir string, format Format) (*Dataset, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a folder: a dataset is a folder holding train.tsv, valid.tsv and test.tsv (optionally gzipped)", dir)
	}
	d := &Dataset{Dir: dir, Name: folderName(dir)}
	paths := map[string]string{}
	for _, s := range Splits {
		p, err := findFile(dir, s, true)
		if err != nil {
			return nil, err
		}
		paths[s] = p
	}
	raw := map[string][]row{}
	for _, s := range Splits {
		rows, err := readTSV(paths[s], 3)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 && s == "train" {
			return nil, fmt.Errorf("%s: no triples", paths[s])
		}
		raw[s] = rows
	}
	if format == "" || format == FormatAuto {
		first := raw["train"][0]
		format = FormatNames
		why := "is not three integers"
		if f := first.fields; isInt(f[0]) && isInt(f[1]) && isInt(f[2]) {
			format, why = FormatIDs, "is three integers"
		}
		d.FormatNote = fmt.Sprintf("%s: format %s (line %d %s; --format ids or names to choose)", paths["train"], format, first.line, why)
	}
	switch format {
	case FormatIDs:
		err = d.fromIDs(paths, raw)
	case FormatNames:
		err = d.fromNames(paths, raw)
	default:
		err = fmt.Errorf("unknown triple format %q (want auto, ids or names)", format)
	}
	if err != nil {
		return nil, err
	}
	if err := d.readLabels(format); err != nil {
		return nil, err
	}
	return d, nil
}

func isInt(s string) bool {
	_, err := strconv.ParseInt(s, 10, 32)
	return err == nil
}

// CheckName refuses a dataset name that would not print as one: the name heads tables
// and keys the seeds of a run, so a blank name, a control character (a newline splits a
// heading) or a '|' (a Markdown table's column break) is an error.
func CheckName(name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("the dataset name is blank")
	}
	for _, r := range name {
		switch {
		case unicode.IsControl(r):
			return fmt.Errorf("the dataset name holds the control character %q", r)
		case r == '|':
			return fmt.Errorf("the dataset name holds '|', which would break the Markdown tables it heads")
		}
	}
	return nil
}

// fileBases and fileExts name every file a dataset folder is read from: base+ext.
var (
	fileBases = []string{"train", "valid", "test", "entities", "relations", "entity_labels"}
	fileExts  = []string{".tsv.gz", ".tsv", ".txt.gz", ".txt"}
)

// DatasetFiles are the names of every file Load may read in a dataset folder, for a
// writer of datasets (sample synth) that must not mix its files with another dataset's.
func DatasetFiles() []string {
	var names []string
	for _, b := range fileBases {
		for _, e := range fileExts {
			names = append(names, b+e)
		}
	}
	return names
}

// findFile finds base.tsv.gz, base.tsv, base.txt.gz or base.txt in dir. Two of them is
// an error rather than a silent pick: they may well differ (an unpacked copy edited, a
// stale archive).
func findFile(dir, base string, required bool) (string, error) {
	var found []string
	for _, ext := range fileExts {
		p := filepath.Join(dir, base+ext)
		if _, err := os.Stat(p); err == nil {
			found = append(found, p)
		}
	}
	switch {
	case len(found) > 1:
		return "", fmt.Errorf("%s: %s are both there: which is the %s file is ambiguous; keep one", dir,
			strings.Join(found, " and "), base)
	case len(found) == 1:
		return found[0], nil
	case !required:
		return "", nil
	}
	return "", fmt.Errorf("%s: no %s.tsv[.gz] (or %s.txt) in the dataset folder", dir, base, base)
}

type row struct {
	line   int
	fields []string
}

// readTSV reads a tab-separated file, gzipped or not, requiring n fields per line.
// Blank lines are skipped.
func readTSV(path string, n int) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	var r io.Reader = br
	var gzErr *errReader
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, gzipError(err))
		}
		defer gz.Close()
		gzErr = &errReader{r: gz}
		r = gzErr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	var rows []row
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if line == 1 {
			// A UTF-8 byte-order mark, which some editors write, is not part of the first
			// field: left there, it would make an ids file read as names.
			text = strings.TrimPrefix(text, "\ufeff")
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		if !utf8.ValidString(text) {
			// Names become the UTF-8 string columns of the artifacts and the export's
			// files, which must hold valid UTF-8: refused here, where the line is known.
			return nil, fmt.Errorf("%s:%d: byte %d is not valid UTF-8: the dataset's files must be UTF-8 text (convert one in another encoding first, e.g. iconv -f latin1 -t utf-8)",
				path, line, invalidUTF8At(text)+1)
		}
		var fields []string
		if strings.Contains(text, "\t") {
			fields = strings.Split(text, "\t")
		} else {
			fields = strings.Fields(text)
		}
		if len(fields) != n && !(n == 2 && len(fields) == 1) {
			if gzErr != nil && gzErr.err != nil {
				// The scanner hands out the partial line before the error that cut it.
				return nil, fmt.Errorf("%s: after line %d: %w", path, line-1, gzipError(gzErr.err))
			}
			return nil, fmt.Errorf("%s:%d: want %d tab-separated fields, got %d", path, line, n, len(fields))
		}
		rows = append(rows, row{line: line, fields: fields})
	}
	if err := sc.Err(); err != nil {
		if gzErr != nil {
			err = gzipError(err)
		}
		return nil, fmt.Errorf("%s: after line %d: %w", path, line, err)
	}
	return rows, nil
}

// invalidUTF8At is the offset of the first byte of s that does not begin a valid UTF-8
// sequence.
func invalidUTF8At(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
	}
	return len(s)
}

// errReader remembers the first error of its reader.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

// gzipError says what a gzip reader's error means for the file.
func gzipError(err error) error {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("gzip stream truncated (the file was cut short): %w", err)
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader), errors.As(err, new(flate.CorruptInputError)):
		return fmt.Errorf("gzip stream corrupt: %w", err)
	}
	return err
}

// readNames reads an "id<TAB>name" table whose ids must run 0..n-1 in order.
func readNames(path string) ([]string, error) {
	rows, err := readTSV(path, 2)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(rows))
	for i, r := range rows {
		id, err := strconv.Atoi(r.fields[0])
		if err != nil || id != i {
			return nil, fmt.Errorf("%s:%d: id %q, want %d (ids must run 0..n-1 in order)", path, r.line, r.fields[0], i)
		}
		if len(r.fields) == 2 {
			names[i] = r.fields[1]
		}
	}
	return names, nil
}

func (d *Dataset) fromIDs(paths map[string]string, raw map[string][]row) error {
	for _, names := range []struct {
		base string
		dst  *[]string
	}{{"entities", &d.EntityNames}, {"relations", &d.RelationNames}} {
		p, err := findFile(d.Dir, names.base, false)
		if err != nil {
			return err
		}
		if p != "" {
			if *names.dst, err = readNames(p); err != nil {
				return err
			}
		}
	}
	parsed := map[string][]Triple{}
	lineOf := map[string][]int{}
	maxEnt, maxRel := int32(-1), int32(-1)
	for _, s := range Splits {
		ts := make([]Triple, len(raw[s]))
		lines := make([]int, len(raw[s]))
		for i, r := range raw[s] {
			f := r.fields
			lines[i] = r.line
			var v [3]int32
			for j, name := range []string{"head", "relation", "tail"} {
				x, err := strconv.ParseInt(f[j], 10, 32)
				if err != nil || x < 0 {
					return fmt.Errorf("%s:%d: %s %q is not a non-negative integer id", paths[s], r.line, name, f[j])
				}
				v[j] = int32(x)
			}
			ts[i] = Triple{v[0], v[1], v[2]}
			maxEnt = max(maxEnt, v[0], v[2])
			maxRel = max(maxRel, v[1])
		}
		parsed[s] = ts
		lineOf[s] = lines
	}
	d.NumEntities = int(maxEnt) + 1
	if d.EntityNames != nil {
		d.NumEntities = len(d.EntityNames)
	}
	d.NumRelations = int(maxRel|1) + 1
	// Without name tables the counts come from the largest ids, which must then be
	// dense: every entity and relation is in some triple. A stray large id would
	// otherwise size every per-entity table by it (one line "2000000000 0 1" asking for
	// gigabytes).
	rows := 0
	for _, s := range Splits {
		rows += len(parsed[s])
	}
	if d.EntityNames == nil && d.NumEntities > 2*rows {
		return fmt.Errorf("%s: entity id %d, but the %d triples of the dataset name at most %d entities: ids must run 0..n-1 (or give entities.tsv)",
			d.Dir, maxEnt, rows, 2*rows)
	}
	if d.RelationNames == nil && d.NumRelations > 2*rows+2 {
		return fmt.Errorf("%s: relation id %d, but the %d triples of the dataset name at most %d relations: ids must run 0..n-1 (or give relations.tsv)",
			d.Dir, maxRel, rows, rows)
	}
	if d.RelationNames != nil {
		d.NumRelations = len(d.RelationNames)
		if d.NumRelations%2 != 0 {
			return fmt.Errorf("%s: %d relations; BetaE ids pair each relation with its inverse, so the count must be even", paths["train"], d.NumRelations)
		}
	}
	for _, s := range Splits {
		for i, t := range parsed[s] {
			if int(t.Head) >= d.NumEntities || int(t.Tail) >= d.NumEntities {
				return fmt.Errorf("%s:%d: entity id out of range [0,%d) in %d %d %d", paths[s], lineOf[s][i], d.NumEntities, t.Head, t.Relation, t.Tail)
			}
			if int(t.Relation) >= d.NumRelations {
				return fmt.Errorf("%s:%d: relation id %d out of range [0,%d)", paths[s], lineOf[s][i], t.Relation, d.NumRelations)
			}
		}
		if err := checkInverseClosure(paths[s], parsed[s], lineOf[s]); err != nil {
			return err
		}
	}
	seen := make([]bool, d.NumEntities)
	for _, t := range parsed["train"] {
		seen[t.Head], seen[t.Tail] = true, true
	}
	d.Train = parsed["train"]
	d.Valid = d.dropUnseen("valid", parsed["valid"], func(t Triple) bool { return seen[t.Head] && seen[t.Tail] })
	d.Test = d.dropUnseen("test", parsed["test"], func(t Triple) bool { return seen[t.Head] && seen[t.Tail] })
	return nil
}

// checkInverseClosure requires that (h, r, t) is listed iff (t, r^1, h) is: BetaE-id files
// list both directions, and the sampler walks edges backwards through the inverse ids.
func checkInverseClosure(path string, ts []Triple, lines []int) error {
	set := make(map[Triple]struct{}, len(ts))
	for _, t := range ts {
		set[t] = struct{}{}
	}
	for i, t := range ts {
		if _, ok := set[Triple{t.Tail, t.Relation ^ 1, t.Head}]; !ok {
			return fmt.Errorf("%s:%d: fact %d %d %d has no inverse row %d %d %d (BetaE-id files list both directions)",
				path, lines[i], t.Head, t.Relation, t.Tail, t.Tail, t.Relation^1, t.Head)
		}
	}
	return nil
}

func (d *Dataset) dropUnseen(split string, ts []Triple, keep func(Triple) bool) []Triple {
	out := ts[:0]
	for _, t := range ts {
		if keep(t) {
			out = append(out, t)
		}
	}
	if dropped := len(ts) - len(out); dropped > 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%s: dropped %d %s rows whose entity does not occur in train", d.Dir, dropped, split))
	}
	return out
}

func (d *Dataset) fromNames(paths map[string]string, raw map[string][]row) error {
	ent := map[string]int32{}
	rel := map[string]int32{}
	for _, r := range raw["train"] {
		f := r.fields
		for _, e := range []string{f[0], f[2]} {
			if _, ok := ent[e]; !ok {
				ent[e] = int32(len(ent))
				d.EntityNames = append(d.EntityNames, e)
			}
		}
		if _, ok := rel[f[1]]; !ok {
			rel[f[1]] = int32(len(rel))
			d.RelationNames = append(d.RelationNames, "+"+f[1], "-"+f[1])
		}
	}
	d.NumEntities, d.NumRelations = len(ent), 2*len(rel)
	for _, s := range Splits {
		ts := make([]Triple, 0, 2*len(raw[s]))
		dropped := 0
		for _, r := range raw[s] {
			f := r.fields
			h, ok1 := ent[f[0]]
			r, ok2 := rel[f[1]]
			t, ok3 := ent[f[2]]
			if !(ok1 && ok2 && ok3) {
				dropped++
				continue
			}
			ts = append(ts, Triple{h, 2 * r, t}, Triple{t, 2*r + 1, h})
		}
		if dropped > 0 {
			d.Warnings = append(d.Warnings, fmt.Sprintf("%s: dropped %d %s facts whose entity or relation does not occur in train", paths[s], dropped, s))
		}
		switch s {
		case "train":
			d.Train = ts
		case "valid":
			d.Valid = ts
		case "test":
			d.Test = ts
		}
	}
	return nil
}

// readLabels reads entity_labels.tsv[.gz], if the folder has one: "id<TAB>label" rows with
// ids in increasing order (a dataset of ids), or "name<TAB>label" rows keyed by the
// entity's name in the triples (a dataset of names, whose ids are assigned at load; names
// that are not train entities are skipped and counted in a warning). Entities it leaves
// out have the label "".
func (d *Dataset) readLabels(format Format) error {
	p, _ := findFile(d.Dir, "entity_labels", false)
	if p == "" {
		return nil
	}
	rows, err := readTSV(p, 2)
	if err != nil {
		return err
	}
	labels := make([]string, d.NumEntities)
	label := func(r row) string {
		if len(r.fields) == 2 {
			return r.fields[1]
		}
		return ""
	}
	if format == FormatNames {
		id := make(map[string]int32, len(d.EntityNames))
		for i, n := range d.EntityNames {
			id[n] = int32(i)
		}
		seen := make([]bool, d.NumEntities)
		skipped := 0
		for _, r := range rows {
			e, ok := id[r.fields[0]]
			if !ok {
				skipped++
				continue
			}
			if seen[e] {
				return fmt.Errorf("%s:%d: a second label for entity %q", p, r.line, r.fields[0])
			}
			seen[e] = true
			labels[e] = label(r)
		}
		if skipped > 0 {
			d.Warnings = append(d.Warnings, fmt.Sprintf("%s: skipped %d labels of names that are not train entities", p, skipped))
		}
		d.EntityLabels = labels
		return nil
	}
	last := -1
	for _, r := range rows {
		id, err := strconv.Atoi(r.fields[0])
		switch {
		case err != nil || id < 0:
			return fmt.Errorf("%s:%d: id %q is not a non-negative integer (rows are id<TAB>label)", p, r.line, r.fields[0])
		case id >= d.NumEntities:
			return fmt.Errorf("%s:%d: entity id %d out of range [0,%d)", p, r.line, id, d.NumEntities)
		case id <= last:
			return fmt.Errorf("%s:%d: id %d after id %d (ids must increase)", p, r.line, id, last)
		}
		last = id
		labels[id] = label(r)
	}
	d.EntityLabels = labels
	return nil
}
