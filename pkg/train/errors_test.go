package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpdateErrorsWrap: an update's error reaches Run's caller wrapped (%w), not
// flattened to text, so that errors.As finds a *NonFiniteError. A learning rate of 1e39
// is finite (Config accepts it) but overflows Adam's float32 step size, so the first
// update makes parameters non-finite while its loss is still finite.
func TestUpdateErrorsWrap(t *testing.T) {
	train, _ := files(t)
	for _, variant := range []string{"rocone", "cone"} {
		t.Run(variant, func(t *testing.T) {
			dir := t.TempDir()
			cfg := tinyConfig(variant)
			cfg.LR = 1e39
			opts := Options{Train: train, Checkpoint: filepath.Join(dir, "c.arrow"), Log: filepath.Join(dir, "l.arrow")}
			_, err := Run(context.Background(), cfg, opts)
			var nf *NonFiniteError
			if !errors.As(err, &nf) {
				t.Fatalf("errors.As finds no *NonFiniteError in %v", err)
			}
			for _, want := range []string{"step 0", "-pool update", nf.Tensor, "no checkpoint was written"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("the folder holds %d entries after the failed run, want none", len(entries))
			}
		})
	}
}
