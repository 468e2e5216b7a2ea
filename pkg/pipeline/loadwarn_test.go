package pipeline

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/model"
)

// TestWarningsWithoutLog: a stage run with no Log (`rank -q`, `embed -q`) still says its
// warnings about the checkpoint, on Warnings (stderr): -q silences progress, never
// warnings.
func TestWarningsWithoutLog(t *testing.T) {
	var buf bytes.Buffer
	was := Warnings
	Warnings = &buf
	defer func() { Warnings = was }()
	dir := t.TempDir()
	queries := fixture(t, dir)
	ck := filepath.Join(dir, "model.arrow") // records no KG digest, no entity-table digest
	writeCheckpoint(t, ck, model.RoConE, 8, 1)
	if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: filepath.Join(dir, "ranks.arrow"), TopK: 3,
		Data: "../../testdata/tiny", Kernels: compute.Reference[float32]{}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"records no KG digest", "records no entity-table digest"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("rank without a Log: warnings %q, want one containing %q", buf.String(), want)
		}
	}
	buf.Reset()
	if err := Embed(EmbedConfig{Checkpoint: ck, Queries: queries, Output: filepath.Join(dir, "cones.arrow"),
		Kernels: compute.Reference[float32]{}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "records no KG digest") {
		t.Errorf("embed without a Log: warnings %q, want one containing %q", buf.String(), "records no KG digest")
	}
	// With a Log, they go there (with the progress), not to Warnings.
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
