//go:build !linux

package main

// keepStacks does nothing here: only Linux re-executes `bot run` (see stacks.go).
func keepStacks([]string) {}
