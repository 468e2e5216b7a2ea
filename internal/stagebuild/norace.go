//go:build !race

package stagebuild

// Race is false: this test binary was built without -race, and so are the stages it builds.
const Race = false
