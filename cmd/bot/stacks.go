package main

import "strings"

// Go's collector halves the stack of every goroutine using under a quarter of it. A worker
// waiting on the model sits a few KB deep in a 32 KB stack, so nearly every collection under
// load halves it, and the run's answer, sent from 15 KB deep, grows it back: each growth copies
// the stack frame by frame. With shrinking off (GODEBUG=gcshrinkstackoff=1) the stacks keep
// their size: BenchmarkBinary's 2,000-message Telegram burst took 6 % less CPU a message and
// 4 MB less peak RSS (freed stacks were not reused as they came back). The setting is read
// only when a Go program starts and no directive in the source can set it, so `bot run`
// starts itself again with it, once, before anything else (stacks_linux.go); a GODEBUG that
// names gcshrinkstackoff (=0 to keep Go's default) is left as the operator set it.

// stackShrinkSetting is what `bot run` adds to GODEBUG.
const stackShrinkSetting = "gcshrinkstackoff=1"

// keepStacksEnv returns environ with stack shrinking turned off, and whether it had to change
// anything: false when GODEBUG already names gcshrinkstackoff, whatever its value.
func keepStacksEnv(environ []string) ([]string, bool) {
	at := -1
	for i, kv := range environ {
		if strings.HasPrefix(kv, "GODEBUG=") {
			at = i // the first one counts, for Go's runtime as for os.Getenv
			break
		}
	}
	if at >= 0 {
		for setting := range strings.SplitSeq(strings.TrimPrefix(environ[at], "GODEBUG="), ",") {
			if name, _, _ := strings.Cut(setting, "="); strings.TrimSpace(name) == "gcshrinkstackoff" {
				return environ, false
			}
		}
	}
	out := make([]string, len(environ), len(environ)+1)
	copy(out, environ)
	if at < 0 {
		return append(out, "GODEBUG="+stackShrinkSetting), true
	}
	if v := strings.TrimPrefix(out[at], "GODEBUG="); strings.TrimSpace(v) == "" {
		out[at] = "GODEBUG=" + stackShrinkSetting
	} else {
		out[at] = out[at] + "," + stackShrinkSetting
	}
	return out, true
}
