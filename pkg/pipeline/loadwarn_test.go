package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/model"
)

// TestWarningsWithoutLog: a stage run with no Log (`rank -q`, `embed -q`, `embed export
// -q`) still says its warnings, on Warnings (stderr): -q silences progress, never warnings.
func TestWarningsWithoutLog(t *testing.T) {
	var buf bytes.Buffer
	dir := t.TempDir()
	queries := fixture(t, dir)
	ck := filepath.Join(dir, "model.arrow") // records no KG digest, no entity-table digest
	writeCheckpoint(t, ck, model.RoConE, 8, 1)
	if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: filepath.Join(dir, "ranks.arrow"), TopK: 3,
		Data: "../../testdata/tiny", Kernels: compute.Reference[float32]{}, Warnings: &buf}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"records no KG digest", "records no entity-table digest"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("rank without a Log: warnings %q, want one containing %q", buf.String(), want)
		}
	}
	buf.Reset()
	if err := Embed(EmbedConfig{Checkpoint: ck, Queries: queries, Output: filepath.Join(dir, "cones.arrow"),
		Kernels: compute.Reference[float32]{}, Warnings: &buf}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "records no KG digest") {
		t.Errorf("embed without a Log: warnings %q, want one containing %q", buf.String(), "records no KG digest")
	}
	// A dataset folder without name tables: export says the names are left empty.
	unnamed := filepath.Join(dir, "unnamed")
	if err := os.Mkdir(unnamed, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, split := range []string{"train.tsv", "valid.tsv", "test.tsv"} {
		b, err := os.ReadFile(filepath.Join("../../testdata/tiny", split))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(unnamed, split), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	buf.Reset()
	if err := Export(ExportConfig{Checkpoint: ck, Data: unnamed, Format: "npy", Output: filepath.Join(dir, "export"), Warnings: &buf}); err != nil {
		t.Fatal(err)
	}
	if want := "has no entities.tsv or relations.tsv"; !strings.Contains(buf.String(), want) {
		t.Errorf("export without a Log: warnings %q, want one containing %q", buf.String(), want)
	}
	// Without Warnings, they go to the Log, in order with the progress.
	buf.Reset()
	var log bytes.Buffer
	if err := Embed(EmbedConfig{Checkpoint: ck, Queries: queries, Output: filepath.Join(dir, "cones2.arrow"),
		Kernels: compute.Reference[float32]{}, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 || !strings.Contains(log.String(), "records no KG digest") {
		t.Errorf("embed with a Log: Warnings %q, Log %q", buf.String(), log.String())
	}
}
