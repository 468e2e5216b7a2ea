package kg

import (
	"cmp"
	"os"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
)

// fuzzLoad writes data as a dataset's train.tsv (the reader recognizes gzip by its magic
// bytes, whatever the name), with small fixed valid and test splits, and loads it in the
// given format. The property: no panic, an error naming a file of the dataset or a
// dataset whose triples are in range, and allocation bounded by a multiple of the input.
func fuzzLoad(f *testing.F, format Format, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
		f.Add([]byte(gz(s)))
		f.Add([]byte("\ufeff" + s))
	}
	real, err := os.ReadFile("../../testdata/tiny/train.tsv")
	if err != nil {
		f.Fatal(err)
	}
	if format == FormatIDs {
		f.Add(real)
		f.Add([]byte(gz(string(real))))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		files := map[string][]byte{"train.tsv": data, "valid.tsv": []byte(seeds[0]), "test.tsv": nil}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var d *Dataset
		n := allocatedBy(func() { d, err = Load(dir, format) })
		if n > 64*uint64(len(data))+4<<20 {
			t.Fatalf("allocated %d bytes for %d bytes of input", n, len(data))
		}
		if err != nil {
			if !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q does not name the dataset's file", err)
			}
			return
		}
		for _, ts := range [][]Triple{d.Train, d.Valid, d.Test} {
			for _, tr := range ts {
				if tr.Head < 0 || int(tr.Head) >= d.NumEntities || tr.Tail < 0 || int(tr.Tail) >= d.NumEntities ||
					tr.Relation < 0 || int(tr.Relation) >= d.NumRelations {
					t.Fatalf("triple %v out of range (%d entities, %d relations)", tr, d.NumEntities, d.NumRelations)
				}
			}
		}
	})
}

func allocatedBy(f func()) uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	f()
	metrics.Read(s)
	return s[0].Value.Uint64() - before
}

func FuzzLoadIDs(f *testing.F) {
	fuzzLoad(f, FormatIDs, "0\t0\t1\n1\t1\t0\n", "0\t0\t1\n1\t1\t0\n1\t2\t2\n2\t3\t1\n", "0 0 1\r\n1 1 0\r\n")
}

func FuzzLoadNames(f *testing.F) {
	fuzzLoad(f, FormatNames, "a\tr\tb\n", "a\tr\tb\nb\ts\tc\n\nc\tr\ta\n", "x y z\r\n")
}

func FuzzLoadAuto(f *testing.F) {
	fuzzLoad(f, FormatAuto, "0\t0\t1\n1\t1\t0\n", "a\tr\tb\n")
}

// FuzzKGDigest loads a train file of the fuzzer's (ids format) as is, with its lines
// reversed, and with one line dropped: the KG digest of the reversed file is the
// original's, and that of the shorter one equals it exactly when a plain comparison of
// the two KGs (counts and each split's facts as sorted lists) finds them equal.
func FuzzKGDigest(f *testing.F) {
	f.Add([]byte("0\t0\t1\n1\t1\t0\n1\t2\t2\n2\t3\t1\n"), uint16(1))
	f.Add([]byte("0\t0\t1\n1\t1\t0\n0\t0\t1\n1\t1\t0\n"), uint16(2)) // a repeated fact
	real, err := os.ReadFile("../../testdata/tiny/train.tsv")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real, uint16(7))
	load := func(t *testing.T, train string) *Dataset {
		dir := t.TempDir()
		for name, b := range map[string]string{"train.tsv": train, "valid.tsv": "0\t0\t1\n1\t1\t0\n", "test.tsv": ""} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		d, err := Load(dir, FormatIDs)
		if err != nil {
			return nil
		}
		return d
	}
	f.Fuzz(func(t *testing.T, data []byte, drop uint16) {
		lines := strings.SplitAfter(string(data), "\n")
		if len(lines) > 0 && !strings.HasSuffix(lines[len(lines)-1], "\n") {
			lines[len(lines)-1] += "\n"
		}
		a := load(t, strings.Join(lines, ""))
		if a == nil {
			return
		}
		reversed := slices.Clone(lines)
		slices.Reverse(reversed)
		if r := load(t, strings.Join(reversed, "")); r != nil && r.Digest() != a.Digest() {
			t.Fatalf("reversing the lines changed the digest")
		}
		shorter := slices.Delete(slices.Clone(lines), int(drop)%len(lines), int(drop)%len(lines)+1)
		b := load(t, strings.Join(shorter, ""))
		if b == nil {
			return
		}
		same := a.NumEntities == b.NumEntities && a.NumRelations == b.NumRelations
		for _, p := range [][2][]Triple{{a.Train, b.Train}, {a.Valid, b.Valid}, {a.Test, b.Test}} {
			x, y := slices.Clone(p[0]), slices.Clone(p[1])
			for _, s := range [][]Triple{x, y} {
				slices.SortFunc(s, func(u, v Triple) int {
					return cmp.Or(cmp.Compare(u.Head, v.Head), cmp.Compare(u.Relation, v.Relation), cmp.Compare(u.Tail, v.Tail))
				})
			}
			same = same && slices.Equal(x, y)
		}
		if (a.Digest() == b.Digest()) != same {
			t.Fatalf("one line dropped: digests equal %v, KGs equal %v", a.Digest() == b.Digest(), same)
		}
	})
}
