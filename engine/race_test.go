//go:build race

package engine

// raceEnabled reports a -race build: sync.Pool then drops items at random,
// so allocation counts mean nothing.
const raceEnabled = true
