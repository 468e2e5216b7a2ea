package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/artifacttest"
	"github.com/rocone/rocone/internal/stagetest"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/pipeline"
)

type row = artifacttest.Row

// TestIntegrity: rank reads what was written or nothing. A single value changed inside a
// queries, cones or checkpoint file that stays a valid Arrow file, a row dropped, a
// stream whose trailer's checksum is changed, is refused by the checksum; a file written
// with a valid checksum but breaking what its format promises (an id out of range,
// answers out of order, a type that is not its structure's, cones missing a query) is
// refused by the reader's checks. Each exits 1 with one message naming the file at fault
// (never the queries for the cones' fault), writes nothing, and leaves every file as it
// was.
func TestIntegrity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	dir := t.TempDir()
	queries, cks := stagetest.Fixtures(t, dir, "rocone-1")
	ck := cks["rocone-1"]
	cones := filepath.Join(dir, "cones.arrow")
	if err := pipeline.Embed(pipeline.EmbedConfig{Checkpoint: ck, Queries: queries, Output: cones, Kernels: compute.Reference[float32]{}}); err != nil {
		t.Fatal(err)
	}
	// hardRow is the index of a query with at least two hard answers.
	_, qrows := artifacttest.Read(t, queries)
	hardRow := slices.IndexFunc(qrows, func(r row) bool { return len(r["hard"].([]int32)) >= 2 })
	if hardRow < 0 {
		t.Fatal("no query with two hard answers")
	}

	bad := filepath.Join(dir, "bad")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	edit := func(name, src string, f func(m map[string]string, r []row) []row) string {
		dst := filepath.Join(bad, name)
		artifacttest.Edit(t, src, dst, f)
		return dst
	}
	// spliced is src with f's edit under src's checksum.
	spliced := func(name, src string, f func(m map[string]string, r []row) []row) string {
		edited := filepath.Join(t.TempDir(), "edited.arrow")
		artifacttest.Edit(t, src, edited, f)
		dst := filepath.Join(bad, name)
		if err := os.WriteFile(dst, artifacttest.Splice(t, src, edited), 0o644); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	stream := func(name, src string) string {
		dst := filepath.Join(bad, name)
		artifacttest.Stream(t, src, dst)
		b, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, artifacttest.CorruptTrailer(t, b), 0o644); err != nil {
			t.Fatal(err)
		}
		return dst
	}

	for _, tc := range []struct {
		name    string
		flag    string // the input replaced
		path    string // by this file ("-" reads stdin from stdin)
		stdin   string
		blame   string // the name the message gives the input
		msg     string
		noBlame string // a name the message must not give
	}{
		{name: "queries: a hard answer changed", flag: "--queries",
			path: spliced("q-value.arrow", queries, func(_ map[string]string, r []row) []row {
				h := slices.Clone(r[hardRow]["hard"].([]int32))
				h[len(h)-1]++
				r[hardRow]["hard"] = h
				return r
			}), msg: "content checksum mismatch"},
		{name: "queries: an anchor changed", flag: "--queries",
			path: spliced("q-anchor.arrow", queries, func(_ map[string]string, r []row) []row {
				a := slices.Clone(r[0]["anchors"].([]int32))
				a[0] = (a[0] + 1) % 82
				r[0]["anchors"] = a
				return r
			}), msg: "content checksum mismatch"},
		{name: "queries: a row dropped", flag: "--queries",
			path: spliced("q-dropped.arrow", queries, func(_ map[string]string, r []row) []row { return r[1:] }), msg: "content checksum mismatch"},
		{name: "queries: the dataset renamed", flag: "--queries",
			path: spliced("q-meta.arrow", queries, func(m map[string]string, r []row) []row { m["dataset"] = "tinx"; return r }), msg: "content checksum mismatch"},
		{name: "queries: an anchor out of range", flag: "--queries",
			path: edit("q-range.arrow", queries, func(_ map[string]string, r []row) []row { r[0]["anchors"] = []int32{82}; return r }),
			msg:  "row 0 (id 0): anchor 82 out of range [0, 82)"},
		{name: "queries: hard answers unsorted", flag: "--queries",
			path: edit("q-unsorted.arrow", queries, func(_ map[string]string, r []row) []row {
				h := slices.Clone(r[hardRow]["hard"].([]int32))
				slices.Reverse(h)
				r[hardRow]["hard"] = h
				return r
			}), msg: "hard answers not sorted without repeats"},
		{name: "queries: a 1p row typed 2p", flag: "--queries",
			path: edit("q-type.arrow", queries, func(_ map[string]string, r []row) []row { r[0]["type"] = "2p"; return r }),
			msg:  `type "2p", but its structure ('e',('r',)) is 1p`},
		{name: "queries: a stream whose checksum trailer is changed", flag: "--queries", path: "-",
			stdin: stream("q.stream.arrow", queries), blame: "stdin", msg: "content checksum mismatch"},
		{name: "queries: written before checksums", flag: "--queries",
			path: func() string {
				dst := filepath.Join(bad, "q-legacy.arrow")
				legacy(t, queries, dst)
				return dst
			}(), msg: "no content checksum (schema metadata content_sha256): written before artifacts carried one, or not by this pipeline; write it again with this version's sample generate (the same --seed gives the same queries) or sample import-betae"},
		{name: "cones: an aperture changed", flag: "--cones",
			path: spliced("c-value.arrow", cones, func(_ map[string]string, r []row) []row {
				a := slices.Clone(r[3]["aperture"].([]float32))
				a[1] /= 2
				r[3]["aperture"] = a
				return r
			}), msg: "content checksum mismatch", noBlame: queries},
		{name: "cones: a query's cones dropped", flag: "--cones",
			path: edit("c-dropped.arrow", cones, func(_ map[string]string, r []row) []row { return r[1:] }),
			msg:  "lacks the cones of query 0 (1p), which it should hold", noBlame: queries},
		{name: "cones: a query's type changed", flag: "--cones",
			path: edit("c-type.arrow", cones, func(_ map[string]string, r []row) []row { r[0]["type"] = "2p"; return r }),
			msg:  "query 0 is of type 2p there, of 1p in the queries", noBlame: queries},
		{name: "cones: an aperture above π", flag: "--cones",
			path: edit("c-range.arrow", cones, func(_ map[string]string, r []row) []row {
				r[0]["aperture"] = slices.Repeat([]float32{4}, len(r[0]["aperture"].([]float32)))
				return r
			}), msg: "half aperture[0] = 4 is outside [0, π]", noBlame: queries},
		{name: "cones: a stream whose checksum trailer is changed", flag: "--cones", path: "-",
			stdin: stream("c.stream.arrow", cones), blame: "stdin", msg: "content checksum mismatch", noBlame: queries},
		{name: "checkpoint: a parameter changed", flag: "--checkpoint",
			path: spliced("m-value.arrow", ck, func(_ map[string]string, r []row) []row {
				v := slices.Clone(r[0]["values"].([]float32))
				v[0] += 0.5
				r[0]["values"] = v
				return r
			}), msg: "content checksum mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "ranks.arrow")
			args := []string{"--checkpoint", ck, "--queries", queries, "-q", "-o", out}
			if tc.flag == "--cones" {
				args = append(args, "--cones", cones)
			}
			for i := range args {
				if args[i] == tc.flag {
					args[i+1] = tc.path
				}
			}
			blame := tc.path
			if tc.blame != "" {
				blame = tc.blame
			}
			before, inputs := stagetest.SnapshotDir(t, dir), stagetest.SnapshotDir(t, bad)
			var code int
			var stderr string
			if tc.stdin != "" {
				code, stderr = stagetest.RunIn(t, tc.stdin, bin, args...)
			} else {
				code, stderr = stagetest.Run(t, bin, args...)
			}
			want := "rank: " + blame + ": "
			if strings.HasPrefix(tc.msg, "lacks") {
				want = "rank: " + blame + " "
			}
			if code != 1 || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, tc.msg) || strings.Count(stderr, "rank: ") != 1 ||
				(tc.noBlame != "" && strings.Contains(stderr, tc.noBlame)) {
				t.Errorf("exit %d, stderr %q\nwant exit 1 and %q ... %q", code, stderr, want, tc.msg)
			}
			stagetest.SameDir(t, "run folder", before, stagetest.SnapshotDir(t, dir))
			stagetest.SameDir(t, "bad inputs", inputs, stagetest.SnapshotDir(t, bad))
		})
	}
	// The inputs as written rank.
	out := filepath.Join(t.TempDir(), "ranks.arrow")
	if code, stderr := stagetest.Run(t, bin, "--checkpoint", ck, "--queries", queries, "--cones", cones, "-q", "-o", out); code != 0 {
		t.Fatalf("the inputs as written: exit %d: %s", code, stderr)
	}
	if _, _, err := artifact.ReadRanks(out); err != nil {
		t.Fatal(err)
	}
}

// legacy writes the artifact src at dst as a stage of a version before checksums did:
// the same schema and rows, no content_sha256.
func legacy(t *testing.T, src, dst string) {
	t.Helper()
	artifacttest.WriteLegacy(t, src, dst)
}
