//go:build !race

package main

// raceEnabled tells tests built with -race, whose allocations also map the detector's shadow memory.
const raceEnabled = false
