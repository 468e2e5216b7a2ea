package report

import "testing"

func TestCellBreak(t *testing.T) {
	for _, c := range []struct {
		s      string
		code   bool
		r      rune
		breaks bool
	}{
		{"rocone d=1600", false, 0, false},
		{"ConE (ours) ± σ", false, 0, false},
		{"a|b", false, '|', true},
		{"two\nlines", false, '\n', true},
		{"tab\there", true, '\t', true},
		{"del\x7f", false, '\x7f', true},
		{"next line\u0085", false, '\u0085', true},
		{"`code`", false, 0, false},
		{"`code`", true, '`', true},
		{"é|`", true, '|', true},
		{"", true, 0, false},
	} {
		r, bad := CellBreak(c.s, c.code)
		if r != c.r || bad != c.breaks {
			t.Errorf("CellBreak(%q, %v) = %q, %v; want %q, %v", c.s, c.code, r, bad, c.r, c.breaks)
		}
	}
}
