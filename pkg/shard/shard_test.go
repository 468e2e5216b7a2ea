package shard

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
		err  string
	}{
		{"0/1", Spec{0, 1}, ""},
		{"2/3", Spec{2, 3}, ""},
		{" 6/7 ", Spec{6, 7}, ""},
		{"3/3", Spec{}, "shard index 3 out of range: shards are numbered 0 to 2"},
		{"-1/3", Spec{}, "shard index -1 out of range"},
		{"0/0", Spec{}, "the number of shards must be at least 1"},
		{"1/-2", Spec{}, "the number of shards must be at least 1"},
		{"1", Spec{}, "want i/n"},
		{"", Spec{}, "want i/n"},
		{"a/3", Spec{}, "must be integers"},
		{"1/3/4", Spec{}, "must be integers"},
		{"99999999999999999999/3", Spec{}, "must be integers"},
	} {
		got, err := Parse(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--shard") {
			t.Errorf("Parse(%q): error %v, want one naming --shard and saying %q", tc.in, err, tc.err)
		}
	}
}

// TestRangesTile: for every count and total, the shards' ranges are contiguous, in order,
// cover [0, total) exactly once, and differ in size by at most one; BlockRange cuts on
// block boundaries.
func TestRangesTile(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for total := 0; total <= 40; total++ {
			for _, block := range []int{1, 3, 16} {
				next, nextBlock := 0, 0
				for i := 0; i < n; i++ {
					s := Spec{i, n}
					lo, hi := s.Range(total)
					if lo != next || hi < lo || hi-lo > (total+n-1)/n || hi-lo < total/n {
						t.Fatalf("%v.Range(%d) = [%d, %d), previous shard ended at %d", s, total, lo, hi, next)
					}
					next = hi
					blo, bhi := s.BlockRange(total, block)
					if blo != nextBlock || bhi < blo || (blo%block != 0 && blo != total) || (bhi%block != 0 && bhi != total) {
						t.Fatalf("%v.BlockRange(%d, %d) = [%d, %d), previous ended at %d", s, total, block, blo, bhi, nextBlock)
					}
					nextBlock = bhi
				}
				if next != total || nextBlock != total {
					t.Fatalf("n=%d total=%d: shards end at %d and %d", n, total, next, nextBlock)
				}
			}
		}
	}
	if lo, hi := (Spec{}).Range(5); lo != 0 || hi != 5 {
		t.Errorf("the whole's range is [%d, %d)", lo, hi)
	}
}

// TestBlockRange: BlockRange is Range over the ceil(total/block) blocks, in items: the
// shards' block counts differ by at most one, as Range's sizes do, and a block size
// below 1 is 1.
func TestBlockRange(t *testing.T) {
	for _, c := range []struct {
		s              Spec
		total, block   int
		wantLo, wantHi int
	}{
		{Spec{0, 2}, 10, 3, 0, 6}, // 4 blocks: 2 and 2
		{Spec{1, 2}, 10, 3, 6, 10},
		{Spec{0, 3}, 10, 3, 0, 3}, // 4 blocks: 1, 1, 2
		{Spec{1, 3}, 10, 3, 3, 6},
		{Spec{2, 3}, 10, 3, 6, 10},
		{Spec{0, 2}, 9, 3, 0, 3}, // 3 blocks: 1 and 2
		{Spec{1, 2}, 9, 3, 3, 9},
		{Spec{0, 2}, 8, 4, 0, 4}, // 2 blocks: 1 and 1
		{Spec{1, 2}, 8, 4, 4, 8},
		{Spec{1, 2}, 7, 0, 3, 7}, // block 0 is 1
		{Spec{1, 2}, 7, 1, 3, 7},
		{Spec{}, 7, 3, 0, 7},
	} {
		if lo, hi := c.s.BlockRange(c.total, c.block); lo != c.wantLo || hi != c.wantHi {
			t.Errorf("%v.BlockRange(%d, %d) = [%d, %d), want [%d, %d)", c.s, c.total, c.block, lo, hi, c.wantLo, c.wantHi)
		}
	}
}

func TestMeta(t *testing.T) {
	if m := (Spec{0, 1}).Meta(); m != nil {
		t.Errorf("0/1 writes %v; the whole writes no key", m)
	}
	if m := (Spec{1, 3}).Meta(); m[MetaKey] != "1/3" {
		t.Errorf("1/3 writes %v", m)
	}
	for _, tc := range []struct {
		v    string
		ok   bool
		want Spec
		err  bool
	}{{"", false, Spec{}, false}, {"0/1", true, Spec{}, false}, {"2/5", true, Spec{2, 5}, false}, {"5/5", true, Spec{}, true}, {"x", true, Spec{}, true}} {
		got, err := FromMeta("f.arrow", tc.v, tc.ok)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("FromMeta(%q, %v) = %v, %v", tc.v, tc.ok, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "f.arrow") {
			t.Errorf("error %v does not name the file", err)
		}
	}
}

func TestCheckSet(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	for _, tc := range []struct {
		name  string
		specs []Spec
		err   string
	}{
		{"complete", []Spec{{1, 3}, {0, 3}, {2, 3}}, ""},
		{"whole", []Spec{{}}, ""},
		{"one of one", []Spec{{0, 1}}, ""},
		{"missing", []Spec{{0, 3}, {2, 3}}, "shard 1/3 missing (given 2 of 3: a b)"},
		{"two missing", []Spec{{3, 4}, {0, 4}}, "shard 1/4, 2/4 missing"},
		{"repeated", []Spec{{0, 2}, {1, 2}, {1, 2}}, "b and c are both shard 1/2"},
		{"shard 0 repeated", []Spec{{0, 2}, {1, 2}, {0, 2}}, "a and c are both shard 0/2"},
		{"counts differ", []Spec{{0, 2}, {1, 3}}, "a is shard 0/2 but b is shard 1/3"},
		{"whole twice", []Spec{{}, {}}, "a and b are both the whole run"},
	} {
		err := CheckSet("ranks of m", names[:len(tc.specs)], tc.specs)
		if tc.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "ranks of m: ") {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
}

// FuzzParse: any --shard value parses to a valid spec (0 <= i < n) or is an error;
// never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0/1", "2/3", "3/3", "-1/2", "x", "1/0", "99999999999999999999/1", " 1/2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := Parse(s)
		if err != nil {
			return
		}
		if sp.Count < 1 || sp.Index < 0 || sp.Index >= sp.Count {
			t.Fatalf("Parse(%q) = %+v: out of range", s, sp)
		}
	})
}

func TestCheckTiling(t *testing.T) {
	names := []string{"a", "b", "c"}
	for _, c := range []struct {
		spans []Span
		want  string
	}{
		{[]Span{{0, 4, 10}, {4, 8, 10}, {8, 10, 10}}, ""},
		{[]Span{{1, 4, 10}, {4, 8, 10}, {8, 10, 10}}, "items 0-1 are in no shard (a begins at 1)"},
		{[]Span{{0, 4, 10}, {5, 8, 10}, {8, 10, 10}}, "items 4-5 are in no shard (a ends at 4, b begins at 5)"},
		{[]Span{{0, 4, 10}, {3, 8, 10}, {8, 10, 10}}, "items 3-4 are in two shards (a ends at 4, b begins at 3)"},
		{[]Span{{0, 4, 10}, {4, 8, 10}, {8, 9, 10}}, "items 9-10 are in no shard (c, the last, ends at 9)"},
		{[]Span{{0, 4, 10}, {4, 8, 11}, {8, 10, 10}}, "a holds items of 10, b of 11"},
	} {
		err := CheckTiling("run", names, c.spans)
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.spans, err, c.want)
		}
	}
	for _, bad := range []string{"", "3-2/10", "0-11/10", "0-3", "-1-3/10", "0-3/10 ", "a-b/c"} {
		if _, err := ParseSpan("f", bad); err == nil {
			t.Errorf("ParseSpan(%q): no error", bad)
		}
	}
	for _, bad := range []string{"3-3/10", "0-0/10"} { // empty
		if _, err := ParseSpan("f", bad); err == nil {
			t.Errorf("ParseSpan(%q): no error for an empty range", bad)
		}
	}
	for _, good := range []Span{{16, 32, 40}, {0, 3, 10}, {3, 10, 10}, {0, 1, 1}} {
		if s, err := ParseSpan("f", good.String()); err != nil || s != good {
			t.Errorf("ParseSpan(%q) = %v, %v; want %v", good.String(), s, err, good)
		}
		if !good.Known() {
			t.Errorf("%v.Known() = false, want true", good)
		}
	}
	if (Span{}).Known() {
		t.Errorf("the zero Span (no range recorded) is Known")
	}
}

// FuzzParseSpan: any shard_range value is a Span that prints back to it, or an error;
// never a panic, never an empty or out-of-bounds range.
func FuzzParseSpan(f *testing.F) {
	for _, s := range []string{"0-16/40", "16-40/40", "3-2/10", "0-11/10", "-1-3/10", "", "1-2/3/4", "99999999999999999999-1/2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, err := ParseSpan("f", v)
		if err != nil {
			return
		}
		if s.String() != v || s.First < 0 || s.First >= s.End || s.End > s.Total {
			t.Fatalf("%q parsed as %+v", v, s)
		}
	})
}
