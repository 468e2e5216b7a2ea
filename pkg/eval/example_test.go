package eval_test

import (
	"fmt"
	"os"

	"github.com/rocone/rocone/pkg/eval"
)

// Rank two queries and summarise them by type, as in docs/queries.md §5.
func Example() {
	var ranker eval.Ranker // reuse one per worker: ranking then does not allocate
	var acc eval.Accumulator
	var ranks []int32

	// A 1p query over 6 entities. Entity 2 is an easy answer and does not compete; the
	// hard answer 4 is beaten only by the non-answer 0.
	scores := []float32{0.9, 0.1, 0.95, 0.3, 0.8, 0.2}
	ranks, err := ranker.FilteredRanks(scores, []int32{2}, []int32{4}, ranks)
	if err != nil {
		panic(err)
	}
	fmt.Println("1p ranks:", ranks)
	if err := acc.Add("1p", ranks); err != nil {
		panic(err)
	}

	// A 2in query with two hard answers. Ties: entity 1 has the same score as the hard
	// answer 3 and a smaller id, so it ranks above it.
	scores = []float32{0.7, 0.5, 0.9, 0.5, 0.1, 0.0}
	ranks, err = ranker.FilteredRanks(scores, nil, []int32{3, 2}, ranks)
	if err != nil {
		panic(err)
	}
	fmt.Println("2in ranks:", ranks)
	if err := acc.Add("2in", ranks); err != nil {
		panic(err)
	}

	s := acc.Summary()
	tr, _ := s.Type("2in")
	fmt.Printf("2in MRR = %.4f (raw), %.2f (x100)\n", tr.MRR, tr.Percent().MRR)
	fmt.Println("EPFO average complete:", s.EPFO.Complete)
	if err := s.WriteTable(os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// 1p ranks: [2]
	// 2in ranks: [3 1]
	// 2in MRR = 0.6667 (raw), 66.67 (x100)
	// EPFO average complete: false
	// type      queries     MRR     H@1     H@3    H@10
	// 1p              1   50.00    0.00  100.00  100.00
	// 2in             1   66.67   50.00  100.00  100.00
	// AVG-EPFO n/a (missing 2p 3p 2i 3i pi ip 2u up)
	// AVG-neg  n/a (missing 3in inp pin pni)
}
