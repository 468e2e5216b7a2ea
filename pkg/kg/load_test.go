package kg

import (
	"testing"
	"time"
)

func TestLoadShipped(t *testing.T) {
	start := time.Now()
	d, err := Load("../../data/fb15k-237", FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded in %v", time.Since(start))
	if d.NumEntities != 14505 || d.NumRelations != 474 || len(d.Train) != 544230 || len(d.Valid) != 35052 || len(d.Test) != 40876 {
		t.Fatalf("sizes %d %d %d %d %d", d.NumEntities, d.NumRelations, len(d.Train), len(d.Valid), len(d.Test))
	}
	g := NewGraph(d.NumEntities, d.NumRelations, d.Train)
	if g.NumEdges() != 544230 || g.NumRuns() != 149689 {
		t.Fatalf("edges %d runs %d", g.NumEdges(), g.NumRuns())
	}
	t.Logf("train graph: %.2f bytes/edge", float64(g.Bytes())/float64(g.NumEdges()))
	v := NewGraph(d.NumEntities, d.NumRelations, d.Valid)
	te := NewGraph(d.NumEntities, d.NumRelations, d.Test)
	if v.NumRuns() != 20101 || te.NumRuns() != 22812 {
		t.Fatalf("valid runs %d test runs %d", v.NumRuns(), te.NumRuns())
	}
}

// TestLoadName: the dataset's name is its folder's, however the folder is spelled: "."
// named the dataset ".", which then stood in every artifact and table.
func TestLoadName(t *testing.T) {
	t.Chdir("../../testdata/tiny")
	for _, dir := range []string{".", "./", "../tiny", "../tiny/", "../../testdata/tiny/.", "../tiny/../tiny"} {
		d, err := Load(dir, FormatAuto)
		if err != nil {
			t.Fatal(err)
		}
		if d.Name != "tiny" {
			t.Errorf("Load(%q).Name = %q, want tiny", dir, d.Name)
		}
	}
}
