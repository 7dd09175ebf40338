//go:build race

package main

// raceDetector is true in a -race build, whose shadow memory makes RSS
// figures meaningless.
const raceDetector = true
