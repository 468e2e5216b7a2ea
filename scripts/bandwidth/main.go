// Command bandwidth measures this machine's memory read bandwidth the way the rank stage
// reads the entity table: every core summing its share of a large float32 array, best of
// several passes. It prints GB/s, and with -table-bytes the implied bound on queries per
// second for a scorer that must read a table of that size once per query.
package main

import (
	"flag"
	"fmt"
	"runtime"
	"sync"
	"time"
)

func main() {
	size := flag.Int("mib", 512, "array size in MiB (well above the caches)")
	passes := flag.Int("passes", 5, "passes; the best is reported")
	table := flag.Float64("table-bytes", 0, "bytes of an entity table read once per query (e.g. 14505*800*4)")
	flag.Parse()
	n := *size << 20 / 4
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(i & 1023)
	}
	workers := runtime.GOMAXPROCS(0)
	best := 0.0
	var sink float32
	for p := 0; p < *passes; p++ {
		start := time.Now()
		var wg sync.WaitGroup
		sums := make([]float32, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				part := data[w*n/workers : (w+1)*n/workers]
				var s0, s1, s2, s3 float32
				for i := 0; i+3 < len(part); i += 4 {
					s0 += part[i]
					s1 += part[i+1]
					s2 += part[i+2]
					s3 += part[i+3]
				}
				sums[w] = s0 + s1 + s2 + s3
			}(w)
		}
		wg.Wait()
		for _, s := range sums {
			sink += s
		}
		best = max(best, float64(n*4)/time.Since(start).Seconds()/1e9)
	}
	fmt.Printf("memory read bandwidth: %.1f GB/s (%d goroutines, %d MiB, best of %d; checksum %g)\n", best, workers, *size, *passes, sink)
	if *table > 0 {
		fmt.Printf("bound for a %.1f MB table read once per query: %.0f queries/s\n", *table/1e6, best*1e9 / *table)
	}
}
