package cpu

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var abFlag = flag.Bool("ab", false, "run A/B timing")

func TestABEval(t *testing.T) {
	if !*abFlag {
		t.Skip()
	}
	rng := rand.New(rand.NewPCG(1, 1))
	const dim, rows, queries = 800, 14505, 16
	axis, half, ent := randF32(rng, queries*dim, -3, 3), randF32(rng, queries*dim, 0, 3), randF32(rng, rows*dim, -3, 3)
	be1, be2 := New(Options{Workers: 1}), New(Options{Workers: 2})
	tab1, tab2 := be1.PrepareEntities(ent, rows, dim), be2.PrepareEntities(ent, rows, dim)
	dist := make([]float32, queries*rows)
	nb := dim / lanes
	qt := be1.queryTable(axis, half, 1, dim, 0.02)
	p := tab1.(*prepared)
	var e [4][]float32
	for i := range e {
		e[i] = p.tab[i*nb*eBlock : (i+1)*nb*eBlock]
	}
	elems := float64(queries * rows * dim)
	ops := map[string]func(){
		"hot-kernel": func() {
			var out [8]float32
			for i := 0; i < queries*rows/4; i++ {
				avx512Dist.fwd4(qt.s, &e, nb, &out)
			}
		},
		"eval-w1": func() { tab1.DistanceForward(dist, axis, half, nil, queries, rows, 0.02) },
		"eval-w2": func() { tab2.DistanceForward(dist, axis, half, nil, queries, rows, 0.02) },
	}
	names := []string{"hot-kernel"}
	for _, tc := range [][3]int{{64, 50, 0}, {64, 50, 1}, {32, 25, 0}, {32, 25, 1}} {
		n := fmt.Sprintf("w1-t%d-c%d-pf%d", tc[0], tc[1], tc[2])
		names = append(names, n)
		ops[n] = func() {
			evalTile, evalChunk = tc[0], tc[1]
			be1.dk.fwd4 = fwd4AVX512
			if tc[2] == 1 {
				be1.dk.fwd4 = fwd4PFAVX512
			}
			tab1.DistanceForward(dist, axis, half, nil, queries, rows, 0.02)
		}
	}
	times := map[string][]float64{}
	for rep := 0; rep < 8; rep++ {
		for _, n := range names {
			t0 := time.Now()
			ops[n]()
			times[n] = append(times[n], time.Since(t0).Seconds())
		}
	}
	for _, n := range names {
		ts := times[n]
		slices.Sort(ts)
		t.Log(fmt.Sprintf("%-12s best %.2f Gelem/s  median %.2f", n, elems/ts[0]/1e9, elems/ts[len(ts)/2]/1e9))
	}
}
