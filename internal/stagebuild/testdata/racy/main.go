// Command racy writes one variable from two goroutines without synchronisation: a data
// race that the race detector reports whatever the timing, and that a binary built
// without -race runs through, exiting 0.
package main

import (
	"fmt"
	"sync"
)

func main() {
	var n int
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n++
		}()
	}
	wg.Wait()
	fmt.Println(n > 0)
}
