//go:build race

package stagebuild

// Race is true: this test binary was built with -race, so the stages it builds are too (and run
// several times slower: a test that bounds a stage's time allows for it).
const Race = true
