package gpu

import (
	"math"
	"strings"
	"testing"
)

func TestParseReverts(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{in: ""},
		{in: " , "},
		{in: "etab", want: "etab"},
		{in: "stacked, gemm-cost", want: "gemm-cost,stacked"},
		{in: "gemm-cost,etab,stacked", want: "gemm-cost,etab,stacked"},
		{in: "gemm-warps, etab", want: "etab,gemm-warps"},
		{in: "etab,etab", err: "etab is named twice"},
		{in: "etab,tf32", err: `no revert "tf32": want a comma-separated list of gemm-cost, etab, stacked, gemm-warps`},
		{in: "ETAB", err: `no revert "ETAB"`},
	} {
		r, err := ParseReverts(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseReverts(%q): error %v, want one containing %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseReverts(%q): %v", c.in, err)
			continue
		}
		if got := r.String(); got != c.want {
			t.Errorf("ParseReverts(%q).String() = %q, want %q", c.in, got, c.want)
		}
		if again, err := ParseReverts(r.String()); err != nil || again != r {
			t.Errorf("ParseReverts(%q) = %+v, %v; want %+v back", r.String(), again, err, r)
		}
		if (r == Reverts{}) != (r.Describe() == "") {
			t.Errorf("%+v: Describe() = %q", r, r.Describe())
		}
	}
}

// TestRevertGemmCost: the reverted GEMM policy is the waves rule, and turning the revert
// off again brings back the cost model, at a shape where the two choose differently.
func TestRevertGemmCost(t *testing.T) {
	d := NewDevice(nil) // 132 SMs: the multiprocessors' default without a driver to ask
	const M, N, K = 1600, 1600, 587
	costTile, costSplits := d.gemmShape(M, N, K)
	d.gemmPolicy = policyWaves
	wavesTile, wavesSplits := d.gemmShape(M, N, K)
	d.gemmPolicy = policyCost
	if costTile == wavesTile && costSplits == wavesSplits {
		t.Fatalf("%d×%d×%d: cost and waves both choose tile %d split %d; pick a shape where they differ", M, N, K, costTile, costSplits)
	}
	d.SetReverts(Reverts{GemmCost: true})
	if tile, s := d.gemmShape(M, N, K); tile != wavesTile || s != wavesSplits {
		t.Errorf("reverted: tile %d split %d, want the waves rule's %d and %d", tile, s, wavesTile, wavesSplits)
	}
	if !d.Reverts().GemmCost {
		t.Errorf("Reverts() = %+v after SetReverts(GemmCost)", d.Reverts())
	}
	d.SetReverts(Reverts{})
	if tile, s := d.gemmShape(M, N, K); tile != costTile || s != costSplits {
		t.Errorf("revert undone: tile %d split %d, want the cost model's %d and %d", tile, s, costTile, costSplits)
	}
}

// TestGemmWarps: the cost model's scale for the warps an SM holds (gemmCost): a lone
// 64×64 block runs at a quarter of the rate in FP32 (2 warps) and half in TF32 (4), two
// at half in FP32, four or more at the full rate, as does a lone 128×128 block (8 warps);
// Reverts.GemmWarps leaves the scale out.
func TestGemmWarps(t *testing.T) {
	d := NewDevice(nil) // 132 SMs
	unscaled := func(M, N, K, tile int) float64 {
		d.SetReverts(Reverts{GemmWarps: true})
		defer d.SetReverts(Reverts{})
		return d.gemmCost(M, N, K, 132, tile, 1)
	}
	for _, c := range []struct {
		tf32        bool
		M, N, K     int
		tile        int
		slower      float64
		description string
	}{
		{false, 64 * 5, 64 * 13, 800, 64, 4, "65 lone blocks of 2 warps"},
		{false, 64 * 12, 64 * 20, 800, 64, 2, "240 blocks: two of 2 warps on an SM"},
		{false, 64 * 12, 64 * 44, 800, 64, 1, "528: four on an SM"},
		{true, 64 * 5, 64 * 13, 800, 64, 2, "TF32: 65 lone blocks of 4 warps"},
		{true, 64 * 12, 64 * 20, 800, 64, 1, "TF32: two of 4 warps on an SM"},
		{false, 128 * 3, 128 * 7, 800, 128, 1, "21 lone blocks of 8 warps"},
	} {
		d.tf32 = c.tf32
		got, base := d.gemmCost(c.M, c.N, c.K, 132, c.tile, 1), unscaled(c.M, c.N, c.K, c.tile)
		if !(math.Abs(got/base-c.slower) <= 1e-12) {
			t.Errorf("%s (%d×%d×%d, tile %d): %.3g s, %.3g× the unscaled %.3g; want %g×", c.description, c.M, c.N, c.K, c.tile, got, got/base, base, c.slower)
		}
	}
}

// FuzzParseReverts: any value of $ROCONE_GPU_REVERT is read or refused (with nothing
// reverted), never a panic; a value read prints back (String) to one that reads the same.
func FuzzParseReverts(f *testing.F) {
	for _, s := range []string{"", "etab", "gemm-cost, stacked", "etab,etab", ",,", "gemm-cost,etab,stacked", "gemm-warps,etab", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseReverts(s)
		if err != nil {
			if r != (Reverts{}) {
				t.Fatalf("%q: refused (%v) but %+v", s, err, r)
			}
			return
		}
		again, err := ParseReverts(r.String())
		if err != nil || again != r {
			t.Fatalf("%q: %+v prints as %q, which reads as %+v, %v", s, r, r.String(), again, err)
		}
	})
}
