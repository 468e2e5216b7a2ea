package report

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
)

// bootstrapTypes fills reps[t] with B bootstrap replicates of type t's mean metrics. get(t)
// returns the type's name and its per-query metrics (already averaged over seeds: the mean
// over seeds of the resampled type means equals the resampled mean of the seed-averaged
// per-query metrics, since every seed uses the same indices). Each type has its own random
// stream, seeded by (seed, hash of the type's name), so the types run in parallel and the
// result does not depend on the scheduling.
func bootstrapTypes(reps [][][4]float64, get func(t int) (string, [][4]float64), B int, seed uint64) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for t := range reps {
		name, vals := get(t)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			reps[t] = bootstrapMeans(vals, B, typeStream(seed, name))
		})
	}
	wg.Wait()
}

// typeStream returns the random stream of one type.
func typeStream(seed uint64, typ string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(typ))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// bootstrapMeans returns B replicates of the mean of vals, each over len(vals) values drawn
// uniformly with replacement.
func bootstrapMeans(vals [][4]float64, B int, r *rand.Rand) [][4]float64 {
	n := len(vals)
	out := make([][4]float64, B)
	for b := range out {
		var sum [4]float64
		for range n {
			v := &vals[r.IntN(n)]
			sum[0] += v[0]
			sum[1] += v[1]
			sum[2] += v[2]
			sum[3] += v[3]
		}
		for m := range 4 {
			out[b][m] = sum[m] / float64(n)
		}
	}
	return out
}

// setIntervals sets Lo and Hi of every metric of st to the percentile interval of the
// replicates at the given level, or to NaN when there are none.
func setIntervals(st *Stats, reps [][4]float64, level float64) {
	xs := make([]float64, len(reps))
	for m := range 4 {
		s := st.Get(Metric(m))
		if len(reps) == 0 {
			s.Lo, s.Hi = math.NaN(), math.NaN()
		} else {
			for b, r := range reps {
				xs[b] = r[m]
			}
			slices.Sort(xs)
			s.Lo = quantile(xs, (1-level)/2)
			s.Hi = quantile(xs, (1+level)/2)
		}
		st.set(m, s)
	}
}

// quantile returns the p-quantile of sorted (non-empty, ascending) with linear
// interpolation between order statistics: position p·(n−1), 0-based.
func quantile(sorted []float64, p float64) float64 {
	n := len(sorted)
	x := p * float64(n-1)
	i := int(math.Floor(x))
	if i >= n-1 {
		return sorted[n-1]
	}
	if i < 0 {
		return sorted[0]
	}
	f := x - float64(i)
	return sorted[i] + f*(sorted[i+1]-sorted[i])
}
