package artifact

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/rocone/rocone/pkg/query"
	"github.com/rocone/rocone/pkg/shard"
)

// QueriesMeta is the schema metadata of a queries artifact.
type QueriesMeta struct {
	Split        string // train, valid or test
	Dataset      string // e.g. FB15k-237
	NumEntities  int    // entity ids lie in [0, NumEntities)
	NumRelations int    // relation ids lie in [0, NumRelations)
	// EntitiesDigest is kg.Dataset.EntityDigest of the KG the queries were sampled on
	// (metadata key entities_digest): it tells later stages which entity table names the
	// ids. Empty in files written before it existed, or for a KG without entity names.
	EntitiesDigest string
	// KGDigest is kg.Dataset.Digest of the KG the queries were sampled on (metadata key
	// kg_digest): its entities, relations and edges, so that even a KG without names is
	// told from another of the same counts. Empty for queries not sampled from a dataset
	// folder (a test's).
	KGDigest string
	// Shard is the part of a sampling run a shard file holds (`sample generate --shard`,
	// metadata key shard); the whole for an ordinary queries file, which has no such key.
	Shard shard.Spec
	// Sampling is the sampling run's options (JSON, metadata key sampling), written in
	// shard files only: `sample merge` refuses shards of different runs by it.
	Sampling string
	// Coverage is what a shard file covered of each type (JSON, metadata key
	// shard_coverage, shard files only): the type's count, how many of the shard's attempt
	// blocks it sampled, how many candidates it holds. `sample merge` replays the shards'
	// candidates in attempt order and needs to know where each shard's attempts end.
	Coverage string
}

// Query is one row of a queries artifact; see the package documentation for the meaning
// of each field.
type Query struct {
	ID        int64
	Type      string
	Structure string
	Anchors   []int32
	Relations []int32
	Easy      []int32
	Hard      []int32
}

// Columns of the queries artifact, by index.
const (
	colID = iota
	colType
	colStructure
	colAnchors
	colRelations
	colEasy
	colHard
	colAttempt // shard files only
)

var queriesSpec = spec{
	kind:    "queries",
	version: 1,
	fields: []arrow.Field{
		colID:        {Name: "id", Type: arrow.PrimitiveTypes.Int64},
		colType:      {Name: "type", Type: arrow.BinaryTypes.String},
		colStructure: {Name: "structure", Type: arrow.BinaryTypes.String},
		colAnchors:   {Name: "anchors", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32)},
		colRelations: {Name: "relations", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32)},
		colEasy:      {Name: "easy", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32)},
		colHard:      {Name: "hard", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32)},
	},
}

// queriesShardSpec is the schema of a shard file (`sample generate --shard i/n`, metadata
// key shard): the queries columns and the attempt column, which only `sample merge` reads
// (QueriesWriter.WriteShard, QueriesReader.Attempt): the number of the sampling attempt
// that found the row's query, by which the merge replays the shards in the unsharded
// run's order. Every stage that uses queries refuses a shard file (CheckWhole), so the
// extra column never reaches them; an ordinary queries file is unchanged.
var queriesShardSpec = spec{
	kind:    queriesSpec.kind,
	version: queriesSpec.version,
	fields:  append(slices.Clip(queriesSpec.fields), arrow.Field{Name: "attempt", Type: arrow.PrimitiveTypes.Int64}),
}

// specFor is the schema of a queries file of shard s.
func specFor(s shard.Spec) *spec {
	if s.Whole() {
		return &queriesSpec
	}
	return &queriesShardSpec
}

// The list columns, in column order, with the field of Query each fills and the word for
// one of its elements in errors.
var queryLists = [...]struct {
	col   int
	field func(*Query) *[]int32
	what  string
}{
	{colAnchors, func(q *Query) *[]int32 { return &q.Anchors }, "anchor"},
	{colRelations, func(q *Query) *[]int32 { return &q.Relations }, "relation"},
	{colEasy, func(q *Query) *[]int32 { return &q.Easy }, "easy answer"},
	{colHard, func(q *Query) *[]int32 { return &q.Hard }, "hard answer"},
}

// limit returns the bound below which the ids of list i of queryLists lie.
func (m *QueriesMeta) limit(i int) int {
	if queryLists[i].col == colRelations {
		return m.NumRelations
	}
	return m.NumEntities
}

func (m *QueriesMeta) check(name string) error {
	switch {
	case m.Split == "":
		return fmt.Errorf("%s: queries metadata: empty split", name)
	case m.Dataset == "":
		return fmt.Errorf("%s: queries metadata: empty dataset", name)
	case m.NumEntities < 0 || m.NumRelations < 0:
		return fmt.Errorf("%s: queries metadata: negative num_entities or num_relations", name)
	}
	return nil
}

// Batch limits of the writer. Rows are few bytes each apart from their answer lists, so a
// batch also ends once a list column holds maxBatchValues ids (64 MiB), which keeps
// batches of long-answer queries small and far from the int32 offsets' limit.
const (
	maxBatchRows   = 16384
	maxBatchValues = 1 << 24
)

// QueriesWriter writes a queries artifact row by row, in record batches of up to 16384
// rows, so that a stage need not hold all its queries in memory.
//
// The usual pattern, which leaves no file behind on any error:
//
//	w, err := artifact.CreateQueries(path, meta)
//	if err != nil { ... }
//	defer w.Abort()
//	for ... { if err := w.Write(&q); err != nil { return err } }
//	return w.Close()
type QueriesWriter struct {
	w       *recordWriter
	name    string
	meta    QueriesMeta
	rb      *array.RecordBuilder
	id      *array.Int64Builder
	typ     *array.StringBuilder
	st      *array.StringBuilder
	lists   [len(queryLists)]*array.ListBuilder
	vals    [len(queryLists)]*array.Int32Builder
	attempt *array.Int64Builder // shard files only
	ids     idSet
	structs query.Cache
	rows    int64 // rows accepted so far
}

// CreateQueries starts writing a queries artifact at path: a file, written atomically, or
// stdout for "-". Nothing appears at path until Close succeeds.
func CreateQueries(path string, meta QueriesMeta) (*QueriesWriter, error) {
	name := displayName(path, "stdout")
	if err := meta.check(name); err != nil {
		return nil, err
	}
	values := map[string]string{
		"split":           meta.Split,
		"dataset":         meta.Dataset,
		"num_entities":    strconv.Itoa(meta.NumEntities),
		"num_relations":   strconv.Itoa(meta.NumRelations),
		"entities_digest": meta.EntitiesDigest,
		MetaKG:            meta.KGDigest,
	}
	maps.Copy(values, meta.Shard.Meta()) // none for the whole: unsharded files are unchanged
	if meta.Sampling != "" {
		values["sampling"] = meta.Sampling
	}
	if meta.Coverage != "" {
		values["shard_coverage"] = meta.Coverage
	}
	schema := specFor(meta.Shard).schema(values)
	rw, err := createRecords(path, schema)
	if err != nil {
		return nil, err
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	w := &QueriesWriter{
		w:    rw,
		name: name,
		meta: meta,
		rb:   rb,
		id:   rb.Field(colID).(*array.Int64Builder),
		typ:  rb.Field(colType).(*array.StringBuilder),
		st:   rb.Field(colStructure).(*array.StringBuilder),
	}
	for i, l := range queryLists {
		w.lists[i] = rb.Field(l.col).(*array.ListBuilder)
		w.vals[i] = w.lists[i].ValueBuilder().(*array.Int32Builder)
	}
	if !meta.Shard.Whole() {
		w.attempt = rb.Field(colAttempt).(*array.Int64Builder)
	}
	return w, nil
}

// Write appends q. It checks q against the contract first (a non-negative id not written
// before, a type and a structure, ids within the metadata's counts); a query that fails
// is not written and the writer stays usable. Any other error leaves the artifact unable
// to complete. Write does not retain q. A shard file's rows are written with WriteShard.
func (w *QueriesWriter) Write(q *Query) error {
	if w.attempt != nil {
		return fmt.Errorf("%s: shard %s: a shard file's rows carry their attempt (WriteShard)", w.name, w.meta.Shard)
	}
	return w.write(q, 0)
}

// WriteShard appends q to a shard file (metadata Shard not the whole) with the number of
// the sampling attempt that found it (non-negative), as Write does otherwise.
func (w *QueriesWriter) WriteShard(q *Query, attempt int64) error {
	switch {
	case w.attempt == nil:
		return fmt.Errorf("%s: not a shard file: only shard files record attempts", w.name)
	case attempt < 0:
		return fmt.Errorf("%s: row %d (id %d): negative attempt %d", w.name, w.rows, q.ID, attempt)
	}
	return w.write(q, attempt)
}

func (w *QueriesWriter) write(q *Query, attempt int64) error {
	if w.rb == nil {
		return fmt.Errorf("%s: write after close", w.name)
	}
	if err := w.check(q); err != nil {
		return fmt.Errorf("%s: row %d (id %d): %w", w.name, w.rows, q.ID, err)
	}
	if first, dup := w.ids.add(q.ID); dup {
		return fmt.Errorf("%s: row %d: duplicate id %d (also at row %d)", w.name, w.rows, q.ID, first)
	}
	w.rows++

	w.id.Append(q.ID)
	w.typ.Append(q.Type)
	w.st.Append(q.Structure)
	if w.attempt != nil {
		w.attempt.Append(attempt)
	}
	full := w.id.Len() >= maxBatchRows
	for i, l := range queryLists {
		w.lists[i].Append(true)
		w.vals[i].AppendValues(*l.field(q), nil)
		full = full || w.vals[i].Len() >= maxBatchValues
	}
	if full {
		return w.flush()
	}
	return nil
}

func (w *QueriesWriter) check(q *Query) error {
	switch {
	case q.ID < 0:
		return fmt.Errorf("negative id")
	case q.Type == "":
		return fmt.Errorf("empty type")
	case q.Structure == "":
		return fmt.Errorf("empty structure")
	}
	for i, l := range queryLists {
		vals := *l.field(q)
		if len(vals) > maxBatchValues {
			return fmt.Errorf("%d %ss, more than %d", len(vals), l.what, maxBatchValues)
		}
		if j := outOfRange(vals, w.meta.limit(i)); j >= 0 {
			return fmt.Errorf("%s %d out of range [0, %d)", l.what, vals[j], w.meta.limit(i))
		}
	}
	return checkShape(q, &w.structs)
}

// checkShape checks what a query's structure and answers promise: the structure parses,
// its type names it (query.Structure.Name: a BetaE name, or custom), it has an anchor
// and a relation id for each of the structure's slots, and its easy and hard answers
// are sorted ascending without repeats. Writers and readers both check it, so a row
// whose type says 2in but whose structure is 1p, or an answer list out of order (which
// ranking reads by binary search), never gets written or read.
func checkShape(q *Query, structs *query.Cache) error {
	s, err := structs.Parse(q.Structure)
	if err != nil {
		return fmt.Errorf("structure %.200q: %w", q.Structure, err)
	}
	if name := s.Name(); q.Type != name {
		return fmt.Errorf("type %.100q, but its structure %s is %s", q.Type, s, name)
	}
	if len(q.Anchors) != s.NumAnchors || len(q.Relations) != s.NumRelations {
		return fmt.Errorf("%d anchors and %d relations, but its structure %s has %d and %d",
			len(q.Anchors), len(q.Relations), s, s.NumAnchors, s.NumRelations)
	}
	for _, l := range []struct {
		what string
		ids  []int32
	}{{"easy", q.Easy}, {"hard", q.Hard}} {
		for i := 1; i < len(l.ids); i++ {
			if l.ids[i] <= l.ids[i-1] {
				return fmt.Errorf("%s answers not sorted without repeats: %d after %d", l.what, l.ids[i], l.ids[i-1])
			}
		}
	}
	return nil
}

// flush writes the pending rows as one record batch.
func (w *QueriesWriter) flush() error {
	if w.id.Len() == 0 {
		return nil
	}
	var sizes [len(queryLists)]int
	for i, v := range w.vals {
		sizes[i] = v.Len()
	}
	rec := w.rb.NewRecord()
	defer rec.Release()
	// The next batch is likely the size of this one; reserving that up front spares
	// growing the builders by doubling, which copies the values again each time.
	for i, v := range w.vals {
		v.Reserve(sizes[i])
	}
	return w.w.write(rec)
}

// Close writes the pending rows and completes the artifact: a file is renamed into place.
// On error nothing is left at the path (any previous file there is untouched).
func (w *QueriesWriter) Close() error {
	if w.rb == nil {
		return w.w.close() // reports the double close
	}
	err := w.flush()
	w.rb.Release()
	w.rb = nil
	if err != nil {
		w.w.abort()
		return err
	}
	return w.w.close()
}

// Abort abandons the artifact: a file's temporary file is removed, a stream on stdout is
// left without its end-of-stream marker so that readers reject it. Abort does nothing
// after Close, so it may be deferred.
func (w *QueriesWriter) Abort() {
	if w.rb != nil {
		w.rb.Release()
		w.rb = nil
	}
	w.w.abort()
}

// WriteQueries writes qs as a queries artifact at path ("-" for stdout).
func WriteQueries(path string, meta QueriesMeta, qs []Query) error {
	w, err := CreateQueries(path, meta)
	if err != nil {
		return err
	}
	defer w.Abort()
	for i := range qs {
		if err := w.Write(&qs[i]); err != nil {
			return err
		}
	}
	return w.Close()
}

// QueriesReader reads a queries artifact a row at a time, checking each record batch
// against the contract as it arrives: an artifact that breaks it ends the iteration with
// an error naming the path and the row.
//
//	r, err := artifact.OpenQueries(path)
//	if err != nil { ... }
//	defer r.Close()
//	for r.Next() {
//		q := r.Query()
//		...
//	}
//	if err := r.Err(); err != nil { ... }
type QueriesReader struct {
	r        *Reader
	spec     *spec
	meta     QueriesMeta
	batch    []Query
	attempts []int64 // the batch's attempts, in a shard file
	pos      int     // index in batch of the next query
	rows     int64   // rows in the batches decoded so far
	ids      idSet
	strs     interner
	structs  query.Cache
	err      error
}

// OpenQueries opens the queries artifact at path ("-" for stdin) and checks its schema
// and metadata.
func OpenQueries(path string) (*QueriesReader, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	meta, err := queriesMeta(r)
	if err != nil {
		r.Close()
		return nil, err
	}
	return &QueriesReader{r: r, spec: specFor(meta.Shard), meta: meta, strs: interner{}}, nil
}

func queriesMeta(r *Reader) (QueriesMeta, error) {
	var m QueriesMeta
	md := r.Schema().Metadata()
	// The shard key decides the columns, so read it first; a file that is not a queries
	// artifact at all is reported by the spec check, not by its shard key.
	sh, shErr := metaShard(r.name, md)
	if err := specFor(sh).check(r.name, r.Schema()); err != nil {
		if shErr == nil && !sh.Whole() && queriesSpec.check(r.name, r.Schema()) == nil {
			return m, fmt.Errorf("%s: shard %s of a sampling run without the attempt column: written by an older sample generate; generate the shards again", r.name, sh)
		}
		return m, err
	}
	var err error
	if m.Split, err = metaString(r.name, md, "split"); err != nil {
		return m, err
	}
	if m.Dataset, err = metaString(r.name, md, "dataset"); err != nil {
		return m, err
	}
	if m.NumEntities, err = metaCount(r.name, md, "num_entities"); err != nil {
		return m, err
	}
	if m.NumRelations, err = metaCount(r.name, md, "num_relations"); err != nil {
		return m, err
	}
	m.EntitiesDigest, _ = md.GetValue("entities_digest") // optional: absent in older files
	if m.KGDigest, err = metaString(r.name, md, MetaKG); err != nil {
		return m, err
	}
	if m.Shard, err = metaShard(r.name, md); err != nil {
		return m, err
	}
	m.Sampling, _ = md.GetValue("sampling")       // shard files only
	m.Coverage, _ = md.GetValue("shard_coverage") // shard files only
	return m, nil
}

// Meta returns the artifact's metadata.
func (r *QueriesReader) Meta() QueriesMeta { return r.meta }

// Next advances to the next query, reporting whether there is one. It returns false at
// the end of the artifact or on an error, which Err then reports.
func (r *QueriesReader) Next() bool {
	for r.pos >= len(r.batch) {
		if r.err != nil {
			return false
		}
		r.batch, r.attempts, r.err = r.readBatch()
		r.pos = 0
		if r.err == io.EOF {
			r.batch = nil
			return false
		}
	}
	r.pos++
	return true
}

// Query returns the current query. Its slices are not reused by later calls and may be
// kept; empty lists are empty, non-nil slices.
func (r *QueriesReader) Query() Query { return r.batch[r.pos-1] }

// Attempt returns, in a shard file, the number of the sampling attempt that found the
// current query (column attempt); 0 in an ordinary queries file.
func (r *QueriesReader) Attempt() int64 {
	if r.attempts == nil {
		return 0
	}
	return r.attempts[r.pos-1]
}

// Err returns the error, if any, that ended the iteration.
func (r *QueriesReader) Err() error {
	if r.err == io.EOF {
		return nil
	}
	return r.err
}

// Close releases the reader and closes the file it opened.
func (r *QueriesReader) Close() error { return r.r.Close() }

// ReadQueries reads a whole queries artifact from path ("-" for stdin).
func ReadQueries(path string) (QueriesMeta, []Query, error) {
	r, err := OpenQueries(path)
	if err != nil {
		return QueriesMeta{}, nil, err
	}
	defer r.Close()
	// Hold every batch first so that the queries can be decoded into one slice of the
	// right size: growing it instead would copy all the queries so far at each growth.
	// The batches hold the list values the queries point into anyway.
	var recs []arrow.Record
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	n := 0
	for r.r.Next() {
		rec := r.r.Record()
		rec.Retain()
		recs = append(recs, rec)
		n += int(rec.NumRows())
	}
	if err := r.r.Err(); err != nil {
		return QueriesMeta{}, nil, err
	}
	qs := make([]Query, n)
	at := 0
	for _, rec := range recs {
		k := int(rec.NumRows())
		if _, err := r.decode(rec, qs[at:at+k]); err != nil {
			return QueriesMeta{}, nil, err
		}
		at += k
	}
	return r.meta, qs, nil
}

// readBatch decodes the next record batch, or returns io.EOF after the last.
func (r *QueriesReader) readBatch() ([]Query, []int64, error) {
	if !r.r.Next() {
		if err := r.r.Err(); err != nil {
			return nil, nil, err
		}
		return nil, nil, io.EOF
	}
	rec := r.r.Record()
	qs := make([]Query, rec.NumRows())
	attempts, err := r.decode(rec, qs)
	if err != nil {
		return nil, nil, err
	}
	return qs, attempts, nil
}

// decode checks the next record batch against the contract and fills qs, one query per
// row, from it. It returns a shard file's attempts (nil for an ordinary file), a slice of
// the batch's buffer like the lists.
//
// The lists of the queries are capacity-limited slices of the batch's Arrow buffers, not
// copies: no allocation or copy per batch, and appending to one list reallocates it rather
// than overwriting the next. This is safe only because Open reads with a GoAllocator,
// whose buffers are ordinary Go memory that is never reused or freed while referenced;
// with any other allocator the lists would dangle once the batch is released.
func (r *QueriesReader) decode(rec arrow.Record, qs []Query) ([]int64, error) {
	name, n, first := r.r.name, len(qs), r.rows
	for i, c := range rec.Columns() {
		if err := checkNoNulls(name, r.spec.fields[i].Name, c, first); err != nil {
			return nil, err
		}
	}
	ids := rec.Column(colID).(*array.Int64).Int64Values()
	var attempts []int64
	if len(r.spec.fields) > colAttempt {
		attempts = rec.Column(colAttempt).(*array.Int64).Int64Values()
	}
	types, err := stringValues(name, "type", rec.Column(colType).(*array.String))
	if err != nil {
		return nil, err
	}
	structures, err := stringValues(name, "structure", rec.Column(colStructure).(*array.String))
	if err != nil {
		return nil, err
	}
	for k := range qs {
		q := &qs[k]
		row := first + int64(k)
		q.ID = ids[k]
		q.Type = r.strs.get(types.Value(k))
		q.Structure = r.strs.get(structures.Value(k))
		switch {
		case q.ID < 0:
			return nil, fmt.Errorf("%s: row %d: negative id %d", name, row, q.ID)
		case q.Type == "":
			return nil, fmt.Errorf("%s: row %d (id %d): empty type", name, row, q.ID)
		case q.Structure == "":
			return nil, fmt.Errorf("%s: row %d (id %d): empty structure", name, row, q.ID)
		}
		if prev, dup := r.ids.add(q.ID); dup {
			return nil, fmt.Errorf("%s: row %d: duplicate id %d (also at row %d)", name, row, q.ID, prev)
		}
		if attempts != nil && attempts[k] < 0 {
			return nil, fmt.Errorf("%s: row %d (id %d): negative attempt %d", name, row, q.ID, attempts[k])
		}
	}

	for i, l := range queryLists {
		off, values, err := listSlices(name, queriesSpec.fields[l.col].Name, rec.Column(l.col).(*array.List))
		if err != nil {
			return nil, err
		}
		lo := off[0]
		vals := values[lo:off[n]]
		if vals == nil { // the column's lists are all empty; they read as empty, not nil
			vals = []int32{}
		}
		if j := outOfRange(vals, r.meta.limit(i)); j >= 0 {
			row := sort.Search(n, func(k int) bool { return off[k+1]-lo > int32(j) })
			return nil, fmt.Errorf("%s: row %d (id %d): %s %d out of range [0, %d)",
				name, first+int64(row), ids[row], l.what, vals[j], r.meta.limit(i))
		}
		for k := range qs {
			a, b := off[k]-lo, off[k+1]-lo
			*l.field(&qs[k]) = vals[a:b:b]
		}
	}
	for k := range qs {
		if err := checkShape(&qs[k], &r.structs); err != nil {
			return nil, fmt.Errorf("%s: row %d (id %d): %w", name, first+int64(k), qs[k].ID, err)
		}
	}
	r.rows += int64(n)
	return attempts, nil
}

// stringValues checks a string column's offsets, which the IPC readers do not, so that
// reading its values cannot panic on a corrupt file.
func stringValues(name, col string, a *array.String) (*array.String, error) {
	if a.Len() == 0 {
		return a, nil
	}
	limit := 0
	if buf := a.Data().Buffers()[2]; buf != nil {
		limit = buf.Len()
	}
	if err := checkOffsets(a.ValueOffsets(), limit); err != nil {
		return nil, fmt.Errorf("%s: column %s: %w", name, col, err)
	}
	return a, nil
}

// outOfRange returns the index of the first value outside [0, limit), or -1.
func outOfRange(vals []int32, limit int) int {
	// As uint32, a negative value exceeds any limit: one comparison checks both bounds.
	lim := uint32(min(limit, math.MaxInt32+1))
	for i, v := range vals {
		if uint32(v) >= lim {
			return i
		}
	}
	return -1
}

// idSet finds duplicate ids among those added, in row order. Ids usually come sorted, so
// it keeps a plain list while they increase, and builds a map only when one does not.
type idSet struct {
	sorted []int64         // the ids, while each exceeds the last
	rows   map[int64]int64 // id → row, once they do not
	n      int64           // ids added
}

// add adds the id of the next row, or reports the row where it was first added.
func (s *idSet) add(id int64) (first int64, dup bool) {
	if s.rows == nil {
		if len(s.sorted) == 0 || id > s.sorted[len(s.sorted)-1] {
			s.sorted = append(s.sorted, id)
			s.n++
			return 0, false
		}
		s.rows = make(map[int64]int64, 2*len(s.sorted))
		for row, x := range s.sorted {
			s.rows[x] = int64(row)
		}
		s.sorted = nil
	}
	if row, ok := s.rows[id]; ok {
		return row, true
	}
	s.rows[id] = s.n
	s.n++
	return 0, false
}

// interner shares the values of a string column with few distinct values (type,
// structure): a million rows then hold a few dozen strings rather than a million copies.
// Values are copied out of the Arrow buffers, which the Go strings must not outlive.
type interner map[string]string

func (in interner) get(s string) string {
	if v, ok := in[s]; ok {
		return v
	}
	v := strings.Clone(s)
	if len(in) < 4096 {
		in[v] = v
	}
	return v
}
