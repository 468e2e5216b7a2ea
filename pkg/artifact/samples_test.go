package artifact

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/ipc"
)

// The small real artifacts in testdata/, one of each kind in the IPC file format (as a
// stage writes to a path) and the stream format (as it writes to stdout), seed the fuzz
// targets and the corruption tests. ARTIFACT_TESTDATA=write go test -run
// TestSampleArtifacts ./pkg/artifact/ writes them again, after a format change.

// artifactKinds are the readers of every artifact kind. load returns what the reader
// read, printed (%+v), and its error; read only the error: a nil error means the reader
// accepted the input as a valid artifact of its kind.
var artifactKinds = []artifactKind{
	{"queries", func(p string) (any, error) { m, qs, err := ReadQueries(p); return []any{m, qs}, err }},
	{"checkpoint", func(p string) (any, error) { return ReadCheckpoint(p) }},
	{"cones", func(p string) (any, error) { m, cs, err := ReadCones(p); return []any{m, cs}, err }},
	{"ranks", func(p string) (any, error) { m, rs, err := ReadRanks(p); return []any{m, rs}, err }},
	{"trainlog", func(p string) (any, error) { m, rs, err := ReadTrainLog(p); return []any{m, rs}, err }},
	{"metrics", func(p string) (any, error) { m, rs, err := ReadMetrics(p); return []any{m, rs}, err }},
	{"answers", func(p string) (any, error) { m, rs, err := ReadAnswers(p); return []any{m, rs}, err }},
}

type artifactKind struct {
	kind string
	load func(path string) (any, error)
}

func (k artifactKind) read(path string) error { _, err := k.load(path); return err }

// show is what load read, printed, or the error.
func (k artifactKind) show(path string) (string, error) {
	v, err := k.load(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%+v", v), nil
}

// writeSamples writes one small artifact of each kind into dir, in the file format.
func writeSamples(t testing.TB, dir string) {
	path := func(kind string) string { return filepath.Join(dir, kind+".arrow") }
	check := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	check(WriteQueries(path("queries"), testMeta, testQueries(5)))
	c := ckptTestCheckpoint()
	check(WriteCheckpoint(path("checkpoint"), c))

	cw, err := CreateCones(path("cones"), ConesMeta{Dim: 2, Aperture: "half", Model: "rocone", Dataset: "tiny", Split: "test",
		NumEntities: 9, Checkpoint: "m.arrow", CheckpointHash: "ab", Queries: "q.arrow", QueriesHash: "cd"})
	check(err)
	for i := 0; i < 3; i++ { // query 0's two branches, query 1's first
		check(cw.Write(&Cone{ID: int64(i / 2), Type: "2u", Branch: int8(i % 2), Axis: []float32{float32(i), -1}, Aperture: []float32{0.5, 1}}))
	}
	check(cw.Close())

	rw, err := CreateRanks(path("ranks"), RanksMeta{Model: "rocone", Dataset: "tiny", Split: "test", NumEntities: 9, NumQueries: 2,
		Queries: "q", QueriesHash: "x", Checkpoint: "c", CheckpointHash: "y", Seed: "3", TopK: 2})
	check(err)
	check(rw.Write(&Rank{ID: 0, Type: "1p", Answer: 5, Rank: 1, Top: []int32{5, 6}, TopScores: []float32{2, 1}, TopNames: []string{"a", "b"}}))
	check(rw.Write(&Rank{ID: 1, Type: "2in", Answer: 7, Rank: 9, Top: []int32{1, 2}, TopScores: []float32{3, 1}, TopNames: []string{"c", "d"}}))
	check(rw.Close())

	check(WriteTrainLog(path("trainlog"), TrainLogMeta{Dataset: "tiny", Model: "rocone", Config: `{"dim":8}`, Timings: `{"total":1.5}`}, tlogTestRows(3)))
	check(WriteMetrics(path("metrics"), MetricsMeta{Dataset: "tiny", Model: "rocone", Split: "test", Runs: []string{"a.arrow"}, Resamples: 10, Level: 0.95},
		[]MetricsRow{{Kind: "type", Name: "1p", Queries: 10, Seeds: 1, MRR: MetricStat{0.4, 0.01, 0.38, 0.42}, H1: MetricStat{0.2, 0, math.NaN(), math.NaN()}}}))

	aw, err := CreateAnswers(path("answers"), testAnswersMeta)
	check(err)
	for _, a := range testAnswers {
		check(aw.Write(&a))
	}
	check(aw.Close())
}

// toStream rewrites an artifact in the IPC file format as the same records in the
// stream format, as the stage would have written them to stdout: the schema's checksum
// says trailer, and the checksum trailer ends the stream.
func toStream(t testing.TB, data []byte) []byte {
	fr, err := ipc.NewFileReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	var out bytes.Buffer
	schema := withMeta(fr.Schema(), MetaChecksum, checksumTrailer)
	sum, err := newContentHash(schema)
	if err != nil {
		t.Fatal(err)
	}
	sp := &streamPayloads{w: &out}
	w := ipc.NewWriterWithPayloadWriter(sp, ipc.WithSchema(schema))
	for i := 0; i < fr.NumRecords(); i++ {
		rec, err := fr.Record(i)
		if err != nil {
			t.Fatal(err)
		}
		if err := sum.add(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if sp.trailer, err = trailerMessage(schema, sum.sum()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// plainStream rewrites an artifact in the IPC file format as a stream the way any Arrow
// converter does: the file's schema (its checksum a digest) and records, no trailer.
func plainStream(t testing.TB, data []byte) []byte {
	fr, err := ipc.NewFileReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	var out bytes.Buffer
	w := ipc.NewWriter(&out, ipc.WithSchema(fr.Schema()))
	for i := 0; i < fr.NumRecords(); i++ {
		rec, err := fr.Record(i)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// sample returns the bytes of testdata/<kind>.arrow or, with stream, of
// testdata/<kind>.stream.arrow.
func sample(t testing.TB, kind string, stream bool) []byte {
	name := kind + ".arrow"
	if stream {
		name = kind + ".stream.arrow"
	}
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestSampleArtifacts checks that every sample reads cleanly in both formats, from a file
// and from a pipe, so the seeds stay valid artifacts as the formats evolve.
func TestSampleArtifacts(t *testing.T) {
	if os.Getenv("ARTIFACT_TESTDATA") == "write" {
		dir := t.TempDir()
		writeSamples(t, dir)
		for _, k := range artifactKinds {
			data, err := os.ReadFile(filepath.Join(dir, k.kind+".arrow"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("testdata", k.kind+".arrow"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("testdata", k.kind+".stream.arrow"), toStream(t, data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, k := range artifactKinds {
		for _, stream := range []bool{false, true} {
			data := sample(t, k.kind, stream)
			if err := readAs(t, k.read, data, false); err != nil {
				t.Errorf("%s (stream %v) from a file: %v", k.kind, stream, err)
			}
			if err := readAs(t, k.read, data, true); err != nil {
				t.Errorf("%s (stream %v) from a pipe: %v", k.kind, stream, err)
			}
		}
	}
}

// readAs hands data to read as a regular file or, with pipe, on stdin through a pipe, and
// checks that an error names the input.
func readAs(t testing.TB, read func(string) error, data []byte, pipe bool) error {
	if !pipe {
		path := filepath.Join(tempDir(t), "a.arrow")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		err := read(path)
		if err != nil && !strings.HasPrefix(err.Error(), path+": ") {
			t.Fatalf("error %q does not name the file", err)
		}
		return err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	old := os.Stdin
	os.Stdin = pr
	defer func() { os.Stdin = old }()
	done := make(chan struct{})
	go func() {
		pw.Write(data) // fails once the reader stops early and closes its end
		pw.Close()
		close(done)
	}()
	err = read("-")
	pr.Close()
	<-done
	if err != nil && !strings.HasPrefix(err.Error(), "stdin: ") {
		t.Fatalf("error %q does not name stdin", err)
	}
	return err
}

// tempDir is one temporary directory per test (or fuzz input), reused by every read in
// it: a new one per read would be slow.
func tempDir(t testing.TB) string {
	if d, ok := tempDirs[t]; ok {
		return d
	}
	d := t.TempDir()
	tempDirs[t] = d
	t.Cleanup(func() { delete(tempDirs, t) })
	return d
}

var tempDirs = map[testing.TB]string{}

// allocated runs f and returns the bytes it allocated (freed or not).
func allocated(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	f()
	metrics.Read(sample)
	return sample[0].Value.Uint64() - before
}

// allocationBound is the most a reader may allocate for an input of n bytes: a small
// multiple of the input (the records, their decoded rows and the reader's buffers) and a
// constant for the reader itself (a 64 KiB bufio buffer and the like).
func allocationBound(n int) uint64 { return 64*uint64(n) + 4<<20 }

var _ = io.EOF
