//go:build race

package stagebuild

// raceBuild: this test binary was built with -race, so the stages it builds are too.
const raceBuild = true
