package main

import (
	"os"
	"syscall"
)

// keepStacks starts `bot run` again in this process with stack shrinking off (see stacks.go),
// unless GODEBUG already says how. It returns only when it did nothing or the exec failed (the
// bot then runs with Go's default).
func keepStacks(args []string) {
	if len(args) < 2 || args[1] != "run" {
		return
	}
	env, changed := keepStacksEnv(os.Environ())
	if !changed {
		return
	}
	// /proc/self/exe is this very binary, even if the file was replaced since it started.
	_ = syscall.Exec("/proc/self/exe", args, env)
}
