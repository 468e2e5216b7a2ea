package kernels

import (
	"regexp"
	"strings"
	"testing"
)

// bitExact are the kernels whose results another kernel, or another path through the
// host code, must reproduce bit for bit (and the device tests compare them so): the
// distance table kernels among themselves (from the angles or the entity table; the CSR
// entity gradient against the per-pair rows summed by rows_sum_csr), Adam's one launch
// against its per-tensor launches (with angle_bwd, angle_fwd and ent_half_sincos for the
// angle tensors); and every GEMM kernel (bitExactPrefix: 64×64 tiles against 128×128,
// pipelined against register-staged, a split's fixup against gemm_splitk_sum).
const bitExactPrefix = "gemm"

var bitExact = []string{
	"adam_multi", "adam_multi_vec4", "adam_step",
	"angle_bwd", "angle_fwd", "angle_fwd4",
	"distance_bwd_ent_csr_tab", "distance_bwd_q_etab", "distance_bwd_q_tab", "distance_fwd_etab", "distance_fwd_tab",
	"ent_half_sincos", "rows_sum_csr", "rows_sum_csr4",
}

var (
	ptxEntryRE = regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\(`)
	// An f32 multiply, add, subtract or negation with its modifiers, destination and sources.
	ptxArithRE = regexp.MustCompile(`(?m)^\s*(mul|add|sub|neg)((?:\.\w+)*)\.f32\s+(%f\d+)\s*,\s*([^;]*);`)
)

// contractible lists the places in one entry's PTX where the driver's JIT may fuse a
// product into a sum: a multiply (or its negation) without a rounding modifier whose
// result an add or subtract without one reads. PTX lets the code generator contract
// exactly those ("mul/add sequences with no rounding modifiers may be optimized to use
// fused-multiply-add instructions on the target device"), and whether it does depends on
// the code around them, so the same source inlined into two kernels may round
// differently. fma.rn, mul.rn and add.rn (fmaf, __fmul_rn, __fadd_rn) are never changed.
func contractible(body string) []string {
	products := map[string]bool{}
	var out []string
	for _, m := range ptxArithRE.FindAllStringSubmatch(body, -1) {
		op, mods, dst := m[1], m[2], m[3]
		rounded := strings.Contains(mods, ".rn") || strings.Contains(mods, ".rz") ||
			strings.Contains(mods, ".rm") || strings.Contains(mods, ".rp")
		srcs := strings.Split(m[4], ",")
		switch {
		case op == "mul" && !rounded:
			products[dst] = true
			continue
		case op == "neg" && products[strings.TrimSpace(srcs[0])]:
			products[dst] = true
			continue
		case (op == "add" || op == "sub") && !rounded:
			for _, s := range srcs {
				if products[strings.TrimSpace(s)] {
					out = append(out, strings.TrimSpace(m[0]))
					break
				}
			}
		}
		delete(products, dst) // redefined (a loop's register) by something else
	}
	return out
}

// TestNoContractibleProducts: the bit-exact kernels leave no product-into-sum to the
// compiler (each is an explicit fmaf or rounded on its own), so their bits do not depend
// on where their arithmetic is inlined. An H200 gave the CSR entity gradient and the
// per-pair rows' sum an ulp apart, and the query gradient from the entity table another
// from the angles', while the emulator, compiled without contraction, could not tell.
func TestNoContractibleProducts(t *testing.T) {
	want := map[string]bool{}
	for _, k := range bitExact {
		want[k] = true
	}
	gemms := 0
	for _, m := range Modules() {
		locs := ptxEntryRE.FindAllStringSubmatchIndex(m.PTX, -1)
		for i, loc := range locs {
			name := m.PTX[loc[2]:loc[3]]
			if strings.HasPrefix(name, bitExactPrefix) {
				gemms++
			} else if !want[name] {
				continue
			}
			delete(want, name)
			end := len(m.PTX)
			if i+1 < len(locs) {
				end = locs[i+1][0]
			}
			if hits := contractible(m.PTX[loc[0]:end]); len(hits) > 0 {
				t.Errorf("%s (%s.cu): %d products the JIT may fuse into a sum, e.g. %q", name, m.Name, len(hits), hits[0])
			}
		}
	}
	for name := range want {
		t.Errorf("bit-exact kernel %s is not in the PTX", name)
	}
	if gemms < 20 {
		t.Errorf("%d GEMM kernels in the PTX: the %q prefix no longer names them", gemms, bitExactPrefix)
	}
}

// TestContractible: the check finds a plain product read by a plain sum, directly or
// negated, and passes rounded operations and a register redefined in between.
func TestContractible(t *testing.T) {
	for _, c := range []struct {
		ptx  string
		hits int
	}{
		{"mul.f32 %f1, %f2, %f3;\nadd.f32 %f4, %f1, %f5;", 1},
		{"mul.f32 %f1, %f2, %f3;\nneg.f32 %f6, %f1;\nsub.f32 %f4, %f5, %f6;", 1},
		{"mul.ftz.f32 %f1, %f2, %f3;\nadd.ftz.f32 %f4, %f5, %f1;", 1},
		{"mul.rn.f32 %f1, %f2, %f3;\nadd.f32 %f4, %f1, %f5;", 0},
		{"mul.f32 %f1, %f2, %f3;\nadd.rn.f32 %f4, %f1, %f5;", 0},
		{"fma.rn.f32 %f1, %f2, %f3, %f4;\nadd.f32 %f5, %f1, %f6;", 0},
		{"mul.f32 %f1, %f2, %f3;\nmov.f32 %f1, %f7;\nadd.f32 %f4, %f1, %f5;", 1}, // a mov is not tracked: flagged
		{"mul.f32 %f1, %f2, %f3;\nadd.rn.f32 %f1, %f8, %f9;\nadd.f32 %f4, %f1, %f5;", 0},
		{"mul.f32 %f1, %f2, %f3;\nmul.f32 %f4, %f1, %f5;", 0},
	} {
		if got := contractible(c.ptx); len(got) != c.hits {
			t.Errorf("%q: %d hits %q, want %d", c.ptx, len(got), got, c.hits)
		}
	}
}
