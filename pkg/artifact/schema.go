package artifact

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// Schema metadata keys common to every artifact.
const (
	metaArtifact = "artifact"
	metaVersion  = "version"
)

// Lineage keys: what a result was made from, carried from the queries sampled on a KG to
// the model trained on them and on to its cones, ranks and metrics (README, "Lineage").
const (
	// MetaKG is the digest of the KG's content (kg.Dataset.Digest): entities, relations
	// and edges. Empty where it is not known (a model imported from QE-ConE).
	MetaKG = "kg_digest"
	// MetaTrainFingerprint is the fingerprint of the train file a model was trained on
	// (pkg/train: its queries' ids, structures, ids and answers). Empty where not known.
	MetaTrainFingerprint = "train_fingerprint"
)

// spec is the contract of one artifact kind: its name, the version this package writes
// and reads, and its columns in order.
type spec struct {
	kind    string
	version int
	fields  []arrow.Field
}

// schema returns the schema an artifact of this kind is written with: artifact and
// version first, then the kind's own metadata, sorted by key so that the bytes written do
// not depend on map order.
func (s *spec) schema(meta map[string]string) *arrow.Schema {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	values := make([]string, len(keys))
	for i, k := range keys {
		values[i] = meta[k]
	}
	keys = append([]string{metaArtifact, metaVersion}, keys...)
	values = append([]string{s.kind, strconv.Itoa(s.version)}, values...)
	md := arrow.NewMetadata(keys, values)
	return arrow.NewSchema(s.fields, &md)
}

// check reports whether a schema read from name is of this kind and version, with exactly
// the spec's columns. List element fields are compared by type alone: writers differ in
// how they name them and whether they declare them nullable, and the reader checks the
// data for nulls anyway.
func (s *spec) check(name string, sc *arrow.Schema) error {
	md := sc.Metadata()
	kind, ok := md.GetValue(metaArtifact)
	if !ok {
		return fmt.Errorf("%s: no %q in the schema metadata; not a pipeline artifact (want %q)", name, metaArtifact, s.kind)
	}
	if kind != s.kind {
		return fmt.Errorf("%s: artifact is %q, want %q", name, kind, s.kind)
	}
	version, ok := md.GetValue(metaVersion)
	if !ok {
		return fmt.Errorf("%s: no %q in the schema metadata", name, metaVersion)
	}
	if version != strconv.Itoa(s.version) {
		return fmt.Errorf("%s: version %s not supported (want %d)", name, version, s.version)
	}
	got := sc.Fields()
	for i, want := range s.fields {
		if i >= len(got) {
			return fmt.Errorf("%s: missing column %q (column %d)", name, want.Name, i)
		}
		if got[i].Name != want.Name {
			return fmt.Errorf("%s: column %d is %q, want %q", name, i, got[i].Name, want.Name)
		}
		if !sameType(got[i].Type, want.Type) {
			return fmt.Errorf("%s: column %q has type %s, want %s", name, want.Name, got[i].Type, want.Type)
		}
	}
	if len(got) > len(s.fields) {
		return fmt.Errorf("%s: unexpected column %q (want %d columns)", name, got[len(s.fields)].Name, len(s.fields))
	}
	return nil
}

// sameType is arrow.TypeEqual, except that list element fields are compared by type only.
func sameType(got, want arrow.DataType) bool {
	if w, ok := want.(*arrow.ListType); ok {
		g, ok := got.(*arrow.ListType)
		return ok && sameType(g.Elem(), w.Elem())
	}
	return arrow.TypeEqual(got, want)
}

// metaString returns a required metadata value.
func metaString(name string, md arrow.Metadata, key string) (string, error) {
	v, ok := md.GetValue(key)
	if !ok {
		return "", fmt.Errorf("%s: no %q in the schema metadata", name, key)
	}
	return v, nil
}

// metaCount returns a required metadata value that is a count: a non-negative decimal
// integer.
func metaCount(name string, md arrow.Metadata, key string) (int, error) {
	v, err := metaString(name, md, key)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: schema metadata %s=%q is not a count", name, key, v)
	}
	return n, nil
}

// checkNoNulls reports the first null in column col of a batch whose first row is row
// first of the file, and in its list values if it is a list.
func checkNoNulls(name string, col string, a arrow.Array, first int64) error {
	if a.NullN() > 0 {
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				return fmt.Errorf("%s: row %d: %s is null", name, first+int64(i), col)
			}
		}
	}
	if l, ok := a.(*array.List); ok && l.ListValues().NullN() > 0 {
		return fmt.Errorf("%s: rows %d to %d: %s holds a null", name, first, first+int64(a.Len())-1, col)
	}
	return nil
}

// listSlices returns the offsets of a list<int32> array's lists, one more than its length,
// and the values they index, after checking that the offsets are in order and in bounds
// (the IPC readers do not, and a corrupt file must not make slicing panic).
func listSlices(name, col string, a *array.List) (offsets, values []int32, err error) {
	n := a.Len()
	if n == 0 {
		return []int32{0}, nil, nil
	}
	values = a.ListValues().(*array.Int32).Int32Values()
	start := a.Data().Offset()
	all := a.Offsets()
	if start+n+1 > len(all) {
		return nil, nil, fmt.Errorf("%scolumn %s: corrupt list offsets", named(name), col)
	}
	offsets = all[start : start+n+1]
	if err := checkOffsets(offsets, len(values)); err != nil {
		return nil, nil, fmt.Errorf("%scolumn %s: %w", named(name), col, err)
	}
	return offsets, values, nil
}

// named is the "name: " an error begins with, or nothing for a caller that adds it.
func named(name string) string {
	if name == "" {
		return ""
	}
	return name + ": "
}

// checkOffsets checks that Arrow offsets are non-decreasing and within [0, limit].
func checkOffsets(offsets []int32, limit int) error {
	prev := int32(0)
	for _, o := range offsets {
		if o < prev {
			return fmt.Errorf("corrupt offsets")
		}
		prev = o
	}
	if int(prev) > limit {
		return fmt.Errorf("corrupt offsets")
	}
	return nil
}
