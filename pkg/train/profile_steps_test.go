package train

import "testing"

func TestParseProfileSteps(t *testing.T) {
	for _, c := range []struct {
		in          string
		from, steps int
		bad         bool
	}{
		{"5-14", 5, 10, false},
		{"0-0", 0, 1, false},
		{"7-3", 0, 0, true},
		{"-1-3", 0, 0, true},
		{"5", 0, 0, true},
		{"5-14x", 0, 0, true},
		{"a-b", 0, 0, true},
	} {
		from, steps, err := ParseProfileSteps(c.in)
		if (err != nil) != c.bad || (!c.bad && (from != c.from || steps != c.steps)) {
			t.Errorf("ParseProfileSteps(%q) = %d, %d, %v", c.in, from, steps, err)
		}
	}
	if got := ProfileCSV("out/p.md"); got != "out/p.csv" {
		t.Errorf("ProfileCSV = %s", got)
	}
	if got := ProfileCSV("p"); got != "p.csv" {
		t.Errorf("ProfileCSV = %s", got)
	}
}
