package checkpoint_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/outfiletest"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/checkpoint"
)

// TestForgedCheckpointSize: a checkpoint whose metadata and model_config agree on a
// billion entities, but whose tensors are those of the tiny model, is refused before the
// model is allocated (which would be a fatal out-of-memory).
func TestForgedCheckpointSize(t *testing.T) {
	f := outfiletest.Make(t)
	ck, err := artifact.ReadCheckpoint(f.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	var mc map[string]any
	if err := json.Unmarshal([]byte(ck.Meta.ModelConfig), &mc); err != nil {
		t.Fatal(err)
	}
	for k := range mc {
		if strings.EqualFold(k, "NumEntities") {
			mc[k] = 1_000_000_000
		}
	}
	b, _ := json.Marshal(mc)
	ck.Meta.ModelConfig, ck.Meta.NumEntities = string(b), 1_000_000_000
	forged := filepath.Join(t.TempDir(), "forged.arrow")
	if err := artifact.WriteCheckpoint(forged, ck); err != nil {
		t.Fatal(err)
	}
	_, _, err = checkpoint.Load(forged, nil)
	if err == nil || !strings.Contains(err.Error(), forged) || !strings.Contains(err.Error(), "needs more parameter values than the checkpoint's") {
		t.Fatalf("got %v", err)
	}
	if _, _, err := checkpoint.Load(f.Checkpoint, nil); err != nil {
		t.Fatalf("the real checkpoint: %v", err)
	}
}
