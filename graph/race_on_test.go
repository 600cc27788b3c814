//go:build race

package graph_test

// raceDetector says the tests run with the race detector, which makes
// every stack larger.
const raceDetector = true
