package artifact

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/rocone/rocone/pkg/query"
)

// Fuzz targets for the checksum and for the readers' contract checks. Byte-level fuzzing
// of an artifact (fuzz_test.go) almost never gets past the checksum now, so the checks
// behind it are fuzzed here with rows written under a valid checksum (artifact.Create,
// which checks no contract), against a plain reference of each contract: the reader
// accepts exactly the rows the reference accepts, and so does the kind's writer.

// FuzzChangedByte changes one byte of a sample artifact of any kind, in either form: the
// reader refuses it or reads the artifact written (a change to bytes that carry nothing:
// padding), never another content.
func FuzzChangedByte(f *testing.F) {
	for k := range artifactKinds {
		for _, stream := range []bool{false, true} {
			f.Add(uint8(k), stream, uint32(len(sample(f, artifactKinds[k].kind, stream))/2), uint8(1))
		}
	}
	want := map[string]string{}
	f.Fuzz(func(t *testing.T, kind uint8, stream bool, at uint32, xor uint8) {
		k := artifactKinds[int(kind)%len(artifactKinds)]
		data := bytes.Clone(sample(t, k.kind, stream))
		key := fmt.Sprint(k.kind, stream)
		if _, ok := want[key]; !ok {
			w, err := k.show(writeTemp(t, data))
			if err != nil {
				t.Fatal(err)
			}
			want[key] = w
		}
		if xor == 0 {
			xor = 0x80
		}
		data[int(at)%len(data)] ^= xor
		var got string
		err := readAs(t, func(p string) (err error) { got, err = k.show(p); return err }, data, false)
		if err == nil && got != want[key] {
			t.Fatalf("%s: byte %d ^ %#x: read without error as another artifact", key, int(at)%len(data), xor)
		}
	})
}

// FuzzTrailer replaces the checksum trailer of a sample stream with a message of the
// fuzzer's metadata: no panic, an error naming the input, or a read that the trailer's
// own digest justifies (it is the content's).
func FuzzTrailer(f *testing.F) {
	for k := range artifactKinds {
		data := sample(f, artifactKinds[k].kind, true)
		_, meta := splitTrailer(f, data)
		f.Add(uint8(k), meta)
	}
	f.Fuzz(func(t *testing.T, kind uint8, meta []byte) {
		k := artifactKinds[int(kind)%len(artifactKinds)]
		data := sample(t, k.kind, true)
		head, orig := splitTrailer(t, data)
		var msg bytes.Buffer
		msg.Write(head)
		if len(meta) > 0 {
			writeMessage(&msg, meta)
		}
		msg.Write([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
		err := readAs(t, k.read, msg.Bytes(), len(meta)%2 == 1)
		if err == nil {
			got, _, _ := messageChecksum(meta)
			want, _, _ := messageChecksum(orig)
			if got != want {
				t.Fatalf("accepted a trailer of digest %q, the content's is %q", got, want)
			}
		}
	})
}

// splitTrailer cuts a stream written here into what precedes its trailer message and the
// trailer's metadata.
func splitTrailer(t testing.TB, data []byte) (head, meta []byte) {
	// Walk the messages: continuation marker, metadata length, metadata, body.
	at := 0
	for at+8 <= len(data) {
		n := int(binary.LittleEndian.Uint32(data[at+4:]))
		if n == 0 {
			break
		}
		m := data[at+8 : at+8+n]
		info, err := verifyMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		if info.trailer {
			return data[:at], m
		}
		at += 8 + n + int(info.bodyLen)
	}
	t.Fatal("no trailer")
	return nil, nil
}

// ids turns fuzz bytes into ids, a few of them negative or past the bounds used.
func ids(b []byte) []int32 {
	out := make([]int32, len(b))
	for i, x := range b {
		out[i] = int32(x) - 4
	}
	return out
}

// FuzzQueryRows writes one query row of the fuzzer's type, structure, ids and answers
// under a valid checksum: ReadQueries accepts it exactly when the contract holds (a
// structure whose type it is, an id for each slot, ids in range, answers sorted without
// repeats), and WriteQueries writes exactly those.
func FuzzQueryRows(f *testing.F) {
	f.Add(int64(0), "1p", "('e',('r',))", []byte{5}, []byte{6}, []byte{7, 9}, []byte{8, 10})
	f.Add(int64(3), "2in", "(('e',('r',)),('e',('r','n')))", []byte{5, 6}, []byte{6, 7}, []byte{}, []byte{9, 8})
	f.Add(int64(1), "custom", "(('e',('r','r')),('e',('r','n')),('e',('r',)))", []byte{5, 6, 7}, []byte{6, 7, 8, 9}, []byte{}, []byte{200})
	f.Add(int64(2), "pi", "(('e',('r','r')),('e',('r',)))", []byte{5, 6}, []byte{4, 7, 8}, []byte{9, 9}, []byte{})
	meta := QueriesMeta{Split: "test", Dataset: "toy", NumEntities: 100, NumRelations: 20}
	f.Fuzz(func(t *testing.T, id int64, typ, structure string, anchors, relations, easy, hard []byte) {
		q := Query{ID: id, Type: typ, Structure: structure, Anchors: ids(anchors), Relations: ids(relations), Easy: ids(easy), Hard: ids(hard)}
		want := queryContract(&q, meta)
		dir := t.TempDir()
		path := filepath.Join(dir, "q.arrow")
		schema := queriesSpec.schema(map[string]string{"split": meta.Split, "dataset": meta.Dataset,
			"num_entities": strconv.Itoa(meta.NumEntities), "num_relations": strconv.Itoa(meta.NumRelations), MetaKG: ""})
		writeRows(t, path, schema, func(b *array.RecordBuilder) {
			b.Field(colID).(*array.Int64Builder).Append(q.ID)
			b.Field(colType).(*array.StringBuilder).Append(q.Type)
			b.Field(colStructure).(*array.StringBuilder).Append(q.Structure)
			for i, l := range [][]int32{q.Anchors, q.Relations, q.Easy, q.Hard} {
				lb := b.Field(colAnchors + i).(*array.ListBuilder)
				lb.Append(true)
				lb.ValueBuilder().(*array.Int32Builder).AppendValues(l, nil)
			}
		})
		_, _, err := ReadQueries(path)
		if (err == nil) != want {
			t.Fatalf("%+v: reader %v, contract holds: %v", q, err, want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), path+": ") {
			t.Fatalf("error %q does not name the file", err)
		}
		if werr := WriteQueries(filepath.Join(dir, "w.arrow"), meta, []Query{q}); (werr == nil) != want {
			t.Fatalf("%+v: writer %v, contract holds: %v", q, werr, want)
		}
	})
}

// queryContract is the reference: what a query row must be.
func queryContract(q *Query, m QueriesMeta) bool {
	s, err := query.Parse(q.Structure)
	if err != nil || q.ID < 0 || q.Type == "" || q.Type != s.Name() || len(q.Anchors) != s.NumAnchors || len(q.Relations) != s.NumRelations {
		return false
	}
	in := func(l []int32, n int) bool {
		for _, x := range l {
			if x < 0 || int(x) >= n {
				return false
			}
		}
		return true
	}
	sorted := func(l []int32) bool {
		for i := 1; i < len(l); i++ {
			if l[i] <= l[i-1] {
				return false
			}
		}
		return true
	}
	return in(q.Anchors, m.NumEntities) && in(q.Relations, m.NumRelations) && in(q.Easy, m.NumEntities) && in(q.Hard, m.NumEntities) &&
		sorted(q.Easy) && sorted(q.Hard)
}

// writeRows writes one record batch that fill builds under a valid checksum.
func writeRows(t *testing.T, path string, schema *arrow.Schema, fill func(b *array.RecordBuilder)) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	fill(b)
	rec := b.NewRecord()
	defer rec.Release()
	w, err := Create(path, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// FuzzRankRows writes ranks rows decoded from the fuzzer's bytes (4 a row: query id,
// type, answer, rank) under a valid checksum: ReadRanks accepts them exactly when the
// contract holds (ids from 0, answers and ranks in range, a query's rows together with
// ascending answers and one type, as many queries as num_queries), and the writer writes
// exactly the rows whose order and ranges hold.
func FuzzRankRows(f *testing.F) {
	f.Add(uint8(2), []byte{0, 0, 5, 1, 0, 0, 7, 3, 1, 1, 2, 9})
	f.Add(uint8(2), []byte{0, 0, 5, 1, 1, 1, 2, 9, 0, 0, 7, 3})
	f.Add(uint8(1), []byte{0, 0, 7, 1, 0, 0, 5, 3})
	f.Add(uint8(3), []byte{0, 0, 5, 1, 1, 0, 12, 9})
	const entities = 9
	types := []string{"1p", "2in"}
	f.Fuzz(func(t *testing.T, numQueries uint8, data []byte) {
		if len(data) > 4*64 {
			data = data[:4*64]
		}
		var rows []Rank
		for i := 0; i+4 <= len(data); i += 4 {
			rows = append(rows, Rank{ID: int64(data[i]%8) - 1, Type: types[data[i+1]%2], Answer: int32(data[i+2]) - 1, Rank: int32(data[i+3]) - 1})
		}
		order, count := rankContract(rows, entities)
		want := order && count == int(numQueries) && len(rows) > 0
		meta := RanksMeta{Model: "rocone", Dataset: "toy", Split: "test", NumEntities: entities, NumQueries: int(numQueries), Queries: "q",
			QueriesHash: "x", Checkpoint: "c", CheckpointHash: "y", Seed: "1"}
		dir := t.TempDir()
		path := filepath.Join(dir, "r.arrow")
		writeRows(t, path, ranksSpec(false).schema(meta.values()), func(b *array.RecordBuilder) {
			for _, r := range rows {
				b.Field(0).(*array.Int64Builder).Append(r.ID)
				b.Field(1).(*array.StringBuilder).Append(r.Type)
				b.Field(2).(*array.Int32Builder).Append(r.Answer)
				b.Field(3).(*array.Int32Builder).Append(r.Rank)
			}
		})
		_, _, err := ReadRanks(path)
		if (err == nil) != want {
			t.Fatalf("%d queries, rows %+v: reader %v, contract holds: %v", numQueries, rows, err, want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), path+": ") {
			t.Fatalf("error %q does not name the file", err)
		}
		w, err := CreateRanks(filepath.Join(dir, "w.arrow"), meta)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		var werr error
		for i := range rows {
			if werr = w.Write(&rows[i]); werr != nil {
				break
			}
		}
		if (werr == nil) != order {
			t.Fatalf("rows %+v: writer %v, order and ranges hold: %v", rows, werr, order)
		}
	})
}

// rankContract is the reference: whether rows are in range and in rank's order, and of
// how many queries.
func rankContract(rows []Rank, entities int) (ok bool, queries int) {
	done := map[int64]bool{}
	for i, r := range rows {
		if r.ID < 0 || r.Answer < 0 || int(r.Answer) >= entities || r.Rank < 1 || int(r.Rank) > entities {
			return false, 0
		}
		if i > 0 && rows[i-1].ID == r.ID {
			if r.Type != rows[i-1].Type || r.Answer <= rows[i-1].Answer {
				return false, 0
			}
			continue
		}
		if done[r.ID] {
			return false, 0
		}
		done[r.ID] = true
	}
	return true, len(done)
}

// FuzzConeRows writes cones rows decoded from the fuzzer's bytes (4 a row: query id,
// type, branch, half aperture) under a valid checksum: ReadCones accepts them exactly
// when the contract holds (ids from 0, a query's branches together, 0, 1, ... of one
// type, half apertures in [0, π]), and so does the writer.
func FuzzConeRows(f *testing.F) {
	f.Add([]byte{0, 0, 0, 10, 0, 0, 1, 20, 1, 1, 0, 30})
	f.Add([]byte{0, 0, 1, 10})
	f.Add([]byte{0, 0, 0, 10, 1, 0, 0, 10, 0, 0, 1, 10})
	f.Add([]byte{0, 0, 0, 250})
	types := []string{"2u", "1p"}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4*64 {
			data = data[:4*64]
		}
		var cones []Cone
		for i := 0; i+4 <= len(data); i += 4 {
			h := float32(data[i+3]) / 64 // 0 .. ~4: past π from 202 on
			if data[i+3] == 255 {
				h = float32(math.NaN())
			}
			cones = append(cones, Cone{ID: int64(data[i]%8) - 1, Type: types[data[i+1]%2], Branch: int8(data[i+2]%4) - 1,
				Axis: []float32{0.5}, Aperture: []float32{h}})
		}
		want := coneContract(cones) && len(cones) > 0
		meta := ConesMeta{Dim: 1, Aperture: "half", Model: "rocone", Dataset: "toy", Split: "test", NumEntities: 9}
		dir := t.TempDir()
		path := filepath.Join(dir, "c.arrow")
		writeRows(t, path, conesSpec(1).schema(meta.values()), func(b *array.RecordBuilder) {
			for _, c := range cones {
				b.Field(0).(*array.Int64Builder).Append(c.ID)
				b.Field(1).(*array.StringBuilder).Append(c.Type)
				b.Field(2).(*array.Int8Builder).Append(c.Branch)
				for col, v := range [][]float32{c.Axis, c.Aperture} {
					lb := b.Field(3 + col).(*array.FixedSizeListBuilder)
					lb.Append(true)
					lb.ValueBuilder().(*array.Float32Builder).AppendValues(v, nil)
				}
			}
		})
		_, _, err := ReadCones(path)
		if (err == nil) != want {
			t.Fatalf("cones %+v: reader %v, contract holds: %v", cones, err, want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), path+": ") {
			t.Fatalf("error %q does not name the file", err)
		}
		w, err := CreateCones(filepath.Join(dir, "w.arrow"), meta)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		var werr error
		for i := range cones {
			if werr = w.Write(&cones[i]); werr != nil {
				break
			}
		}
		if (werr == nil) != coneContract(cones) {
			t.Fatalf("cones %+v: writer %v, contract holds: %v", cones, werr, coneContract(cones))
		}
	})
}

// coneContract is the reference: whether cones are in range and in embed's order.
func coneContract(cones []Cone) bool {
	done := map[int64]bool{}
	for i, c := range cones {
		h := c.Aperture[0]
		if c.ID < 0 || !(h >= 0 && h <= float32(math.Pi)) {
			return false
		}
		if i > 0 && cones[i-1].ID == c.ID {
			if c.Type != cones[i-1].Type || c.Branch != cones[i-1].Branch+1 {
				return false
			}
			continue
		}
		if done[c.ID] || c.Branch != 0 {
			return false
		}
		done[c.ID] = true
	}
	return true
}
