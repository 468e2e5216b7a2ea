package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSeeds(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("a"), 0o644)
	os.WriteFile(b, []byte("b"), 0o644)
	link := filepath.Join(dir, "link")
	if err := os.Link(a, link); err != nil {
		t.Fatal(err)
	}
	stat := func(p string) os.FileInfo {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	cfg := func(seed int, extra string) string {
		return `{"model":"rocone","dim":8,"seed":` + string(rune('0'+seed)) + `,"eval_every":3` + extra + `}`
	}
	run := func(path string, seed int) RunIdentity {
		return RunIdentity{Path: path, File: stat(path), Queries: "q1", Dataset: "tiny", Split: "test", Model: "rocone",
			Config: cfg(seed, ""), Seed: string(rune('0' + seed)), CheckpointHash: "ck" + string(rune('0'+seed))}
	}
	tests := []struct {
		name string
		runs func() []RunIdentity
		want []string // error substrings; nil for none
	}{
		{"two seeds", func() []RunIdentity { return []RunIdentity{run(a, 1), run(b, 2)} }, nil},
		{"validation interval is not configuration", func() []RunIdentity {
			r := run(b, 2)
			r.Config = `{"model":"rocone","dim":8,"seed":2,"eval_every":9,"checkpoint_every":4}`
			return []RunIdentity{run(a, 1), r}
		}, nil},
		{"one file twice", func() []RunIdentity { return []RunIdentity{run(a, 1), run(a, 1)} }, []string{"are the same file"}},
		{"one file under two names", func() []RunIdentity {
			r := run(link, 2) // even if its metadata claimed another seed
			return []RunIdentity{run(a, 1), r}
		}, []string{"/a and ", "/link are the same file"}},
		{"same checkpoint (with and without --cones)", func() []RunIdentity {
			r := run(b, 1)
			return []RunIdentity{run(a, 1), r}
		}, []string{"rank the same checkpoint"}},
		{"same seed, other checkpoint file", func() []RunIdentity {
			r := run(b, 1)
			r.CheckpointHash = "other"
			return []RunIdentity{run(a, 1), r}
		}, []string{"same seed 1"}},
		{"cone and rocone", func() []RunIdentity {
			r := run(b, 2)
			r.Model = "cone"
			return []RunIdentity{run(a, 1), r}
		}, []string{"ranks a cone model", "a rocone model", "--models"}},
		{"other configuration", func() []RunIdentity {
			r := run(b, 2)
			r.Config = `{"model":"rocone","dim":16,"seed":2,"eval_every":3,"lambda":0.5}`
			return []RunIdentity{run(a, 1), r}
		}, []string{"different configurations", "dim 8 vs 16", "lambda unset vs 0.5", "--models"}},
		{"other queries", func() []RunIdentity {
			r := run(b, 2)
			r.Queries = "q2"
			return []RunIdentity{run(a, 1), r}
		}, []string{"other queries", "same queries file"}},
		{"old files without a configuration", func() []RunIdentity {
			x, y := run(a, 1), run(b, 2)
			x.Config, y.Config = "", ""
			return []RunIdentity{x, y}
		}, nil},
		{"one old file without a configuration, one with", func() []RunIdentity {
			x := run(a, 1)
			x.Config = ""
			return []RunIdentity{x, run(b, 2)}
		}, nil},
		{"a key null in one configuration, absent in the other", func() []RunIdentity {
			r := run(b, 2)
			r.Config = cfg(2, `,"lambda":null`)
			return []RunIdentity{run(a, 1), r}
		}, []string{"lambda unset vs null"}},
		{"other KG", func() []RunIdentity {
			r := run(b, 2)
			r.KG = "kg2"
			return []RunIdentity{run(a, 1), r}
		}, []string{"trained on another KG"}},
		{"other train file", func() []RunIdentity {
			x, y := run(a, 1), run(b, 2)
			x.TrainFile, y.TrainFile = "t1", "t2"
			return []RunIdentity{x, y}
		}, []string{"another train file (fingerprint t2)", "(fingerprint t1)"}},
		{"streams, unknown seeds, distinct checkpoints", func() []RunIdentity {
			x, y := run(a, 1), run(b, 2)
			x.File, y.File, x.Seed, y.Seed = nil, nil, "", ""
			return []RunIdentity{x, y}
		}, nil},
		{"no checkpoint digests, distinct seeds", func() []RunIdentity {
			x, y := run(a, 1), run(b, 2)
			x.CheckpointHash, y.CheckpointHash = "", ""
			return []RunIdentity{x, y}
		}, nil},
		{"a stream and a file", func() []RunIdentity {
			x := run(a, 1)
			x.File = nil
			return []RunIdentity{x, run(a, 2)}
		}, nil},
		{"old files of one checkpoint", func() []RunIdentity {
			x, y := run(a, 1), run(b, 1)
			x.Config, y.Config, x.Seed, y.Seed = "", "", "", ""
			return []RunIdentity{x, y}
		}, []string{"same checkpoint"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckSeeds(tc.runs())
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestGroupModels(t *testing.T) {
	id := func(path, model, config, seed string) RunIdentity {
		return RunIdentity{Path: path, Queries: "q", Dataset: "tiny", Split: "test", Model: model, Config: config, Seed: seed, CheckpointHash: path}
	}
	runs := []RunIdentity{
		id("r1", "rocone", `{"dim":8,"seed":1}`, "1"),
		id("c1", "cone", `{"dim":8,"seed":1}`, "1"),
		id("r2", "rocone", `{"dim":8,"seed":2}`, "2"),
		id("w1", "rocone", `{"dim":16,"seed":1}`, "1"),
		id("c2", "cone", `{"dim":8,"seed":2}`, "2"),
	}
	groups, err := GroupModels(runs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range groups {
		var paths []string
		for _, i := range g.Runs {
			paths = append(paths, runs[i].Path)
		}
		got = append(got, g.Label+"="+strings.Join(paths, ","))
	}
	want := "rocone (dim 8)=r1,r2 cone=c1,c2 rocone (dim 16)=w1"
	if strings.Join(got, " ") != want {
		t.Errorf("groups %q, want %q", strings.Join(got, " "), want)
	}
	// A group's seeds must still be distinct runs.
	runs = append(runs, id("r1", "rocone", `{"dim":8,"seed":1}`, "1"))
	if _, err := GroupModels(runs); err == nil || !strings.Contains(err.Error(), "same checkpoint") {
		t.Errorf("a seed twice in a group: %v", err)
	}
	// Runs of other train files are other models, labelled by their train files; runs of
	// another KG are refused.
	tf := []RunIdentity{id("r1", "rocone", `{"dim":8,"seed":1}`, "1"), id("r2", "rocone", `{"dim":8,"seed":2}`, "2")}
	tf[0].TrainFile, tf[1].TrainFile = "t1", "t2"
	groups, err = GroupModels(tf)
	if err != nil || len(groups) != 2 || groups[0].Label != "rocone (train file t1)" || groups[1].Label != "rocone (train file t2)" {
		t.Errorf("two train files: %+v, %v", groups, err)
	}
	tf[1].TrainFile, tf[1].KG = "t1", "kg2"
	if _, err := GroupModels(tf); err == nil || !strings.Contains(err.Error(), "another KG") {
		t.Errorf("models of another KG: %v", err)
	}
	// And every model must rank the same queries.
	other := id("x", "cone", `{"dim":8,"seed":3}`, "3")
	other.Queries = "q2"
	if _, err := GroupModels([]RunIdentity{runs[0], other}); err == nil || !strings.Contains(err.Error(), "other queries") {
		t.Errorf("models of other queries: %v", err)
	}
}
