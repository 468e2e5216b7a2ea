package sample

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/rocone/rocone/pkg/kg"
)

// TestFB15k237Counts generates the three FB15k-237 splits at BetaE's full counts and checks
// the counts of the paper and the invariants of every valid/test query.
func TestFB15k237Counts(t *testing.T) {
	if testing.Short() {
		t.Skip("full-size generation; run without -short")
	}
	d, err := kg.Load("../../data/fb15k-237", kg.FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]int{
		"train": {"1p": 149689, "2p": 149689, "3p": 149689, "2i": 149689, "3i": 149689,
			"2in": 14968, "3in": 14968, "inp": 14968, "pin": 14968, "pni": 14968},
		"valid": {"1p": 20088},
		"test":  {"1p": 22796},
	}
	for _, typ := range DefaultTypes("test")[1:] {
		want["valid"][typ], want["test"][typ] = 5000, 5000
	}
	for _, split := range kg.Splits {
		g, err := NewGraphs(d, split)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		_, err = Generate(context.Background(), g, Options{Dataset: d.Name, Seed: 1}, func(q *Query) error {
			got[q.Type]++
			if split == "train" {
				if len(q.Easy) != 0 || len(q.Hard) == 0 {
					return fmt.Errorf("train %s: easy %d hard %d", q, len(q.Easy), len(q.Hard))
				}
				return nil
			}
			if len(q.Hard) == 0 || len(q.Hard) > DefaultMaxAnswers || len(sortedDifference(q.Hard, q.Easy)) != len(q.Hard) ||
				!slices.IsSorted(q.Hard) || !slices.IsSorted(q.Easy) {
				return fmt.Errorf("%s %s: hard %d easy %d, overlapping or unsorted", split, q, len(q.Hard), len(q.Easy))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want[split]) {
			t.Errorf("%s: counts %v, want %v", split, got, want[split])
		}
	}
}

// TestNELLImport imports BetaE's published NELL-995 test queries and checks the counts and
// the mean easy/hard answers read off the file in docs/queries.md §6.
func TestNELLImport(t *testing.T) {
	d, err := kg.Load("../../data/nell-995", kg.FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGraphs(d, "test")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	stats, err := ImportBetaE("../../data/nell-995/betae-queries/test-queries.pkl", g, func(*Query) error { n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	wantMeans := map[string][2]float64{ // hard, easy
		"1p": {1.6, 6.1}, "2p": {14.9, 116.6}, "3p": {17.5, 144.2}, "2i": {5.7, 17.2}, "3i": {6.0, 10.6},
		"ip": {17.4, 168.5}, "pi": {11.9, 79.2}, "2in": {12.9, 117.4}, "3in": {11.1, 43.0}, "inp": {12.9, 110.5},
		"pin": {16.0, 150.1}, "pni": {13.0, 136.6}, "2u": {14.9, 156.8}, "up": {19.0, 236.4},
		"2u-DM": {14.9, 156.8}, "up-DM": {19.0, 236.4},
	}
	if len(stats) != 16 || n != 17021+15*4000 {
		t.Fatalf("%d structures, %d queries", len(stats), n)
	}
	for _, st := range stats {
		wantN := 4000
		if st.Type == "1p" {
			wantN = 17021
		}
		m, ok := wantMeans[st.Type]
		if !ok || st.Queries != wantN || st.Rejected[rejectNoHard] != 0 {
			t.Errorf("%s: %d queries, %d without a hard answer", st.Type, st.Queries, st.Rejected[rejectNoHard])
			continue
		}
		if !(math.Abs(st.MeanHard-m[0]) <= 0.05) || !(math.Abs(st.MeanEasy-m[1]) <= 0.05) {
			t.Errorf("%s: mean hard %.2f easy %.2f, want %.1f %.1f", st.Type, st.MeanHard, st.MeanEasy, m[0], m[1])
		}
	}
}
