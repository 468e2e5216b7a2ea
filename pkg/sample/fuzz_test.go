package sample

import (
	"strings"
	"testing"
)

// FuzzParseCounts: any --count value gives counts of known types, each non-negative, or
// an error quoting the flag; never a panic.
func FuzzParseCounts(f *testing.F) {
	for _, s := range []string{"1p=10", "2p=30,(('e',('r','r','r','r')),('e',('r',)))=10", "1p=1000000000000000000000000000000",
		"1p=-1", "2p=many", "", ",", "1p=1,1p=2", "(('e',('r',)),('e',('r','n')))=5,3in=0", "=5", "7p=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		counts, err := ParseCounts(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--count ") {
				t.Fatalf("error %q does not name the flag", err)
			}
			return
		}
		for typ, n := range counts {
			if n < 0 {
				t.Fatalf("%q: count %d for %s", in, n, typ)
			}
			if _, err := resolveType(typ); err != nil {
				t.Fatalf("%q: accepted type %q: %v", in, typ, err)
			}
		}
	})
}
