//go:build race

package docscheck

// raceEnabled reports whether this binary was built with -race, so that
// `go list -export` asks for the packages the test build compiled.
const raceEnabled = true
