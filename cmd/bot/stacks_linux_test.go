package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestRunStartsWithStackShrinkingOff: `bot run` starts itself again, in the same process, with
// GODEBUG turning stack shrinking off, and still serves.
func TestRunStartsWithStackShrinkingOff(t *testing.T) {
	r := newChaosRig(t, testRedisURL)
	b := r.startBot() // returns once /readyz answers 200
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", b.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(environ), "\x00"), "GODEBUG="+stackShrinkSetting) {
		t.Fatalf("bot run's environment lacks GODEBUG=%s: %q", stackShrinkSetting, environ)
	}
}
