package eval

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// referenceRanks is the protocol of docs/queries.md §5 steps 1–3, written the obvious way:
// sort every entity by (score desc, id asc), take the 0-based raw ranks of all answers, sort
// them, and give the j-th answer (0-based) the filtered rank ρ_j − j + 1. Only hard answers'
// ranks are returned, in the order of hard.
func referenceRanks(scores []float32, easy, hard []int32) []int32 {
	order := make([]int32, len(scores))
	for i := range order {
		order[i] = int32(i)
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
	raw := make([]int, len(scores))
	for pos, v := range order {
		raw[v] = pos
	}
	answers := append(append([]int32{}, easy...), hard...)
	rho := make([]int, len(answers))
	for i, a := range answers {
		rho[i] = raw[a]
	}
	sort.Ints(rho)
	filtered := map[int]int32{} // raw rank -> filtered rank
	for j, r := range rho {
		filtered[r] = int32(r - j + 1)
	}
	out := make([]int32, len(hard))
	for i, h := range hard {
		out[i] = filtered[raw[h]]
	}
	return out
}

func TestFilteredRanksTable(t *testing.T) {
	tests := []struct {
		name       string
		scores     []float32
		easy, hard []int32
		want       []int32
	}{
		{
			// order: 2(.9) 0(.8) 4(.7) 1(.5) 3(.1); hard 4 is beaten by non-answers 2, 0.
			name:   "no ties, no easy",
			scores: []float32{0.8, 0.5, 0.9, 0.1, 0.7},
			hard:   []int32{4, 1},
			want:   []int32{3, 3},
		},
		{
			// easy 2 is removed: hard 4 is beaten only by 0; hard 1 by 0 as well.
			name:   "easy answer above hard ones is filtered",
			scores: []float32{0.8, 0.5, 0.9, 0.1, 0.7},
			easy:   []int32{2},
			hard:   []int32{4, 1},
			want:   []int32{2, 2},
		},
		{
			name:   "easy answer below is irrelevant",
			scores: []float32{0.8, 0.5, 0.9, 0.1, 0.7},
			easy:   []int32{3},
			hard:   []int32{2},
			want:   []int32{1},
		},
		{
			// all score 1: ranking is by id. The only non-answer is 2: it beats hard 3 and 4,
			// not 0 (1 is easy, the rest hard).
			name:   "all tied: smaller ids rank above",
			scores: []float32{1, 1, 1, 1, 1},
			easy:   []int32{1},
			hard:   []int32{3, 4, 0},
			want:   []int32{2, 2, 1},
		},
		{
			// hard 2 (0.5) is beaten by 0 (0.5, smaller id) and 4 (0.9), not by 3 (0.5, larger id).
			name:   "ties with a non-answer broken by id",
			scores: []float32{0.5, 0.1, 0.5, 0.5, 0.9},
			hard:   []int32{2},
			want:   []int32{3},
		},
		{
			name:   "negative zero equals zero",
			scores: []float32{0, float32(math.Copysign(0, -1)), 0},
			hard:   []int32{1},
			want:   []int32{2},
		},
		{
			name:   "zero equals negative zero",
			scores: []float32{float32(math.Copysign(0, -1)), 0, float32(math.Copysign(0, -1))},
			hard:   []int32{1},
			want:   []int32{2},
		},
		{
			name:   "infinities",
			scores: []float32{float32(math.Inf(-1)), float32(math.Inf(1)), 3, float32(math.Inf(1))},
			hard:   []int32{0, 3},
			want:   []int32{3, 2},
		},
		{
			name:   "every entity is an answer",
			scores: []float32{0.3, 0.9, 0.1, 0.9},
			easy:   []int32{1, 2},
			hard:   []int32{0, 3},
			want:   []int32{1, 1},
		},
		{
			name:   "no hard answers",
			scores: []float32{0.3, 0.9},
			easy:   []int32{1},
			want:   []int32{},
		},
		{
			name:   "single entity",
			scores: []float32{-7},
			hard:   []int32{0},
			want:   []int32{1},
		},
	}
	var r Ranker
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.FilteredRanks(tc.scores, tc.easy, tc.hard, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Ranker: got %v, want %v", got, tc.want)
			}
			if ref := referenceRanks(tc.scores, tc.easy, tc.hard); !slices.Equal(ref, tc.want) {
				t.Errorf("reference: got %v, want %v", ref, tc.want)
			}
			got2, err := FilteredRanks(tc.scores, tc.easy, tc.hard, make([]int32, 0, 1))
			if err != nil || !slices.Equal(got2, tc.want) {
				t.Errorf("FilteredRanks: got %v, %v, want %v", got2, err, tc.want)
			}
		})
	}
}

func TestFilteredRanksErrors(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		name       string
		scores     []float32
		easy, hard []int32
		want       string
	}{
		{"NaN non-answer", []float32{1, nan, 0}, nil, []int32{0}, "NaN"},
		{"NaN non-answer below worst", []float32{1, 0, nan}, nil, []int32{0}, "NaN"},
		{"NaN hard answer", []float32{1, nan, 0}, nil, []int32{1}, "NaN"},
		{"NaN easy answer", []float32{1, nan, 0}, []int32{1}, []int32{0}, "NaN"},
		{"hard out of range", []float32{1, 2}, nil, []int32{2}, "out of range"},
		{"hard negative", []float32{1, 2}, nil, []int32{-1}, "out of range"},
		{"easy out of range", []float32{1, 2}, []int32{5}, []int32{0}, "out of range"},
		{"hard twice", []float32{1, 2, 3}, nil, []int32{1, 2, 1}, "twice"},
		{"easy twice", []float32{1, 2, 3}, []int32{0, 0}, []int32{1}, "twice"},
		{"easy and hard", []float32{1, 2, 3}, []int32{0, 2}, []int32{1, 2}, "both"},
		{"easy and hard, tied", []float32{1, 1, 1}, []int32{1}, []int32{0, 1, 2}, "both"},
	}
	var r Ranker
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.FilteredRanks(tc.scores, tc.easy, tc.hard, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want error containing %q", got, err, tc.want)
			}
		})
	}
}

// TestFilteredRanksRandom holds the fast ranking to the reference on random queries with many
// ties, easy answers above and below hard ones, and queries whose every entity is an answer.
func TestFilteredRanksRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	palettes := [][]float32{
		{0, 1},
		{-1, 0, 0.5, 1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1))},
		nil, // continuous
	}
	var r Ranker
	var out []int32
	for iter := range 20000 {
		n := 1 + rng.IntN(40)
		if iter%50 == 0 {
			n = 1 + rng.IntN(3000)
		}
		pal := palettes[rng.IntN(len(palettes))]
		scores := make([]float32, n)
		for i := range scores {
			if pal == nil {
				scores[i] = rng.Float32()
			} else {
				scores[i] = pal[rng.IntN(len(pal))]
			}
		}
		perm := rng.Perm(n)
		var nAns int
		switch rng.IntN(4) {
		case 0:
			nAns = n // every entity is an answer
		default:
			nAns = 1 + rng.IntN(n)
		}
		ans := make([]int32, nAns)
		for i := range ans {
			ans[i] = int32(perm[i])
		}
		nHard := 1 + rng.IntN(nAns)
		if rng.IntN(10) == 0 {
			nHard = nAns // no easy answers
		}
		hard, easy := ans[:nHard], ans[nHard:]
		want := referenceRanks(scores, easy, hard)
		var err error
		out, err = r.FilteredRanks(scores, easy, hard, out)
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		if !slices.Equal(out, want) {
			t.Fatalf("iter %d: n=%d scores=%v easy=%v hard=%v\n got %v\nwant %v",
				iter, n, scores, easy, hard, out, want)
		}
		if nAns == n {
			for i, rk := range out {
				if rk != 1 {
					t.Fatalf("iter %d: every entity is an answer but hard %d has rank %d", iter, hard[i], rk)
				}
			}
		}
	}
}

// TestFilteredRanksAllocs checks that a reused Ranker does not allocate on a
// NELL-sized query.
func TestFilteredRanksAllocs(t *testing.T) {
	scores, easy, hard := bigQuery(63361, 150, 15)
	var r Ranker
	out := make([]int32, 0, len(hard))
	got, err := r.FilteredRanks(scores, easy, hard, out)
	if err != nil {
		t.Fatal(err)
	}
	if want := referenceRanks(scores, easy, hard); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	allocs := testing.AllocsPerRun(20, func() {
		out, _ = r.FilteredRanks(scores, easy, hard, out)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per query, want 0", allocs)
	}
}

// bigQuery is a synthetic query: scores on a coarse grid (many ties), answers spread from the
// top to the bottom of the ranking.
func bigQuery(n, nEasy, nHard int) (scores []float32, easy, hard []int32) {
	rng := rand.New(rand.NewPCG(7, 8))
	scores = make([]float32, n)
	for i := range scores {
		scores[i] = float32(rng.IntN(2000)) / 100
	}
	perm := rng.Perm(n)
	for _, v := range perm[:nEasy] {
		easy = append(easy, int32(v))
	}
	for _, v := range perm[nEasy : nEasy+nHard] {
		hard = append(hard, int32(v))
	}
	return scores, easy, hard
}

func BenchmarkFilteredRanks(b *testing.B) {
	scores, easy, hard := bigQuery(63361, 150, 15)
	var r Ranker
	out := make([]int32, 0, len(hard))
	b.ReportAllocs()
	for b.Loop() {
		out, _ = r.FilteredRanks(scores, easy, hard, out)
	}
}

// BenchmarkFilteredRanksGoodModel: the hard answers score near the top, as for a trained
// model, so most entities take the fast path.
func BenchmarkFilteredRanksGoodModel(b *testing.B) {
	scores, easy, hard := bigQuery(63361, 150, 15)
	for i, h := range hard {
		scores[h] = 100 - float32(i)
	}
	var r Ranker
	out := make([]int32, 0, len(hard))
	b.ReportAllocs()
	for b.Loop() {
		out, _ = r.FilteredRanks(scores, easy, hard, out)
	}
}

func BenchmarkReferenceRanks(b *testing.B) {
	scores, easy, hard := bigQuery(63361, 150, 15)
	for b.Loop() {
		referenceRanks(scores, easy, hard)
	}
}

// TestRankKeyOrder checks that the integer key orders entities exactly as (score desc, id
// asc), for special and random floats.
func TestRankKeyOrder(t *testing.T) {
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, math.SmallestNonzeroFloat32,
		-math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), 1e-38, -1e-38, 3.5, -3.5}
	rng := rand.New(rand.NewPCG(5, 6))
	vals := slices.Clone(special)
	for range 200 {
		vals = append(vals, math.Float32frombits(rng.Uint32()))
	}
	vals = slices.DeleteFunc(vals, func(x float32) bool { return x != x })
	ids := []int32{0, 1, 7, math.MaxInt32}
	for _, a := range vals {
		for _, b := range vals {
			for _, ia := range ids {
				for _, ib := range ids {
					want := a > b || (a == b && ia < ib)
					if got := rankKey(a, ia) < rankKey(b, ib); got != want {
						t.Fatalf("(%v,%d) above (%v,%d): key says %v, want %v", a, ia, b, ib, got, want)
					}
				}
			}
		}
	}
}

// checkAnswers rejects what Ranker.FilteredRanks rejects, with the same message.
func TestCheckAnswers(t *testing.T) {
	const n = 10
	scores := make([]float32, n)
	for _, c := range []struct {
		name       string
		easy, hard []int32
	}{
		{"valid", []int32{1, 2}, []int32{3, 4}},
		{"no hard answers", []int32{1, 1, 99}, nil},
		{"hard out of range", nil, []int32{3, 10}},
		{"negative hard", nil, []int32{-1}},
		{"hard twice", []int32{1}, []int32{3, 5, 3}},
		{"easy out of range", []int32{12}, []int32{3}},
		{"easy twice", []int32{1, 2, 1}, []int32{3}},
		{"easy and hard", []int32{1, 3}, []int32{3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			seen := make([]uint8, n)
			got := checkAnswers(c.easy, c.hard, seen)
			_, want := FilteredRanks(scores, c.easy, c.hard, nil)
			if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
				t.Fatalf("checkAnswers: %v; FilteredRanks: %v", got, want)
			}
			for i, v := range seen {
				if v != 0 {
					t.Fatalf("seen[%d] = %d after the call", i, v)
				}
			}
		})
	}
}
