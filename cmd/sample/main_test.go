package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/outfiletest"
	"github.com/rocone/rocone/pkg/artifact"
)

// TestBadInputLeavesNothing runs the command on bad inputs: each must fail with a message
// naming the file and the fault, and leave no output file behind.
func TestBadInputLeavesNothing(t *testing.T) {
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "train.tsv"), []byte("0\t0\t1\n1\t1\t0\n"), 0o644)
	os.WriteFile(filepath.Join(bad, "valid.tsv"), []byte("0\t0\n"), 0o644)
	os.WriteFile(filepath.Join(bad, "test.tsv"), []byte(""), 0o644)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"bad dataset line", []string{"generate", "--data", bad, "--split", "valid"}, []string{"valid.tsv:1", "want 3"}},
		{"unknown type", []string{"generate", "--data", "../../testdata/tiny", "--split", "valid", "--types", "1p,7p"}, []string{`unknown query type "7p"`}},
		{"malformed structure", []string{"generate", "--data", "../../testdata/tiny", "--split", "valid", "--types", "(('e',('r',)),('e',('q',)))"}, []string{"offset 20", "unknown symbol"}},
		{"bad count", []string{"generate", "--data", "../../testdata/tiny", "--split", "valid", "--count", "2p=many"}, []string{`count "2p=many"`}},
		{"impossible count", []string{"generate", "--data", "../../testdata/tiny", "--split", "test", "--types", "1p,3in", "--count", "3in=1000", "--max-answers", "1"}, []string{"sampling 3in", "--count"}},
		{"unreadable pickle", []string{"import-betae", "--data", "../../testdata/tiny", "--split", "test", "--pickle", "../../testdata/bad-queries.pkl"}, []string{"bad-queries.pkl", "not a readable"}},
		{"missing pickle", []string{"import-betae", "--data", "../../testdata/tiny", "--split", "test", "--pickle", "nope.pkl"}, []string{"nope.pkl"}},
		{"pickle with no hard answer on the split", []string{"import-betae", "--data", "../../testdata/tiny", "--split", "test", "--pickle", "../../testdata/tiny-queries.pkl"},
			[]string{"tiny-queries.pkl: none of its 54 queries has a hard answer on the test split of tiny", "another split or KG"}},
		{"bad split", []string{"generate", "--data", "../../testdata/tiny", "--split", "dev"}, []string{`unknown split "dev"`}},
		{"empty --dataset", []string{"generate", "--data", "../../testdata/tiny", "--split", "test", "--dataset", ""}, []string{"--dataset '': the dataset name is blank"}},
		{"blank --dataset", []string{"import-betae", "--data", "../../testdata/tiny", "--split", "valid", "--pickle", "../../testdata/tiny-queries.pkl", "--dataset", " "}, []string{`--dataset " ": the dataset name is blank`}},
		{"a newline in --dataset", []string{"generate", "--data", "../../testdata/tiny", "--split", "test", "--dataset", "x\ny"}, []string{`the control character '\n'`}},
		{"a | in --dataset", []string{"generate", "--data", "../../testdata/tiny", "--split", "test", "--dataset", "a|b"}, []string{"holds '|'"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "q.arrow")
			err := app().Run(append(append([]string{"sample"}, tc.args...), "-q", "-o", out))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("left %v behind", entries[0].Name())
			}
		})
	}
}

func TestGenerateAndImport(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "valid.arrow")
	err := app().Run([]string{"sample", "generate", "--data", "../../testdata/tiny", "--split", "valid", "-q",
		"--types", "1p,2p,(('e',('r','r','r','r')),('e',('r',)))", "--count", "2p=30,(('e',('r','r','r','r')),('e',('r',)))=10", "-o", out})
	if err != nil {
		t.Fatal(err)
	}
	meta, qs, err := artifact.ReadQueries(out)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Split != "valid" || meta.Dataset != "tiny" || meta.NumEntities != 82 || meta.NumRelations != 10 {
		t.Errorf("meta %+v", meta)
	}
	counts := map[string]int{}
	for i, q := range qs {
		if q.ID != int64(i) {
			t.Fatalf("row %d has id %d", i, q.ID)
		}
		counts[q.Type]++
	}
	if counts["2p"] != 30 || counts["custom"] != 10 || counts["1p"] == 0 {
		t.Errorf("counts %v", counts)
	}
	// testdata's pickle is no BetaE sample of tiny: on the valid split 4 of its 54 queries
	// have a hard answer. All are imported, and the others are a warning that -q keeps.
	imp := filepath.Join(dir, "imported.arrow")
	r := outfiletest.Run(t, time.Minute, "import-betae", "--data", "../../testdata/tiny", "--split", "valid", "-q",
		"--pickle", "../../testdata/tiny-queries.pkl", "-o", imp)
	r.Expect(t, 0, "warning: ../../testdata/tiny-queries.pkl: 50 of its 54 queries have no hard answer on the valid split of tiny (1p 5 of 6, 2p 6 of 6,",
		"is the pickle this split's and this KG's?")
	if _, qs, err := artifact.ReadQueries(imp); err != nil || len(qs) != 54 {
		t.Fatalf("imported %d queries, %v", len(qs), err)
	}
}

// TestByteIdenticalAcrossWorkers: the same seed gives the same bytes whatever --workers.
func TestByteIdenticalAcrossWorkers(t *testing.T) {
	dir := t.TempDir()
	var files [][]byte
	for _, workers := range []string{"1", "3"} {
		out := filepath.Join(dir, "w"+workers+".arrow")
		err := app().Run([]string{"sample", "generate", "--data", "../../testdata/tiny", "--split", "test", "-q",
			"--count", "2p=50,3p=50,2i=50,3i=50,ip=50,pi=50,2u=50,up=50,2in=30,3in=30,inp=30,pin=30,pni=30",
			"--seed", "11", "--workers", workers, "-o", out})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, b)
	}
	if string(files[0]) != string(files[1]) {
		t.Fatal("--workers 1 and --workers 3 wrote different files")
	}
}
