package main

import (
	"fmt"
	"os"
	"os/exec"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// prefaultProbeEnv, set in the environment, makes the test binary start the GC floor with the
// environment it has, then print the heap Go holds resident but free, and the page faults of
// allocating and writing most of the floor's bytes, as "free faults pages", and exit: a process
// of its own, whose heap and faults no other test adds to.
const prefaultProbeEnv = "SB_TEST_PREFAULT_PROBE"

func init() {
	if os.Getenv(prefaultProbeEnv) == "" {
		return
	}
	const floor, n = 16 << 20, 12 << 20
	stop := startGCFloor(os.Environ(), floor)
	free := []rtmetrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	rtmetrics.Read(free)
	before := minorFaults()
	b := make([]byte, n)
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i] = 1
	}
	fmt.Println(free[0].Value.Uint64(), minorFaults()-before, n/os.Getpagesize())
	stop()
	os.Exit(0)
}

func minorFaults() int64 {
	var r syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return r.Minflt
}

// TestGCFloorMakesItsHeapResidentAtStart: after startGCFloor, the heap the process allocates
// next is already resident and takes few page faults; with GOGC set (the floor off) the same
// allocation faults on most of its pages — which shows the count tells the two apart.
func TestGCFloorMakesItsHeapResidentAtStart(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const floor = 16 << 20
	probe := func(extra ...string) (free, faults, pages int64) {
		t.Helper()
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append([]string{prefaultProbeEnv + "=1", "PATH=" + os.Getenv("PATH")}, extra...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("probe %v: %v\n%s", extra, err, out)
		}
		f := strings.Fields(string(out))
		if len(f) != 3 {
			t.Fatalf("probe %v printed %q, want three counts", extra, out)
		}
		free, _ = strconv.ParseInt(f[0], 10, 64)
		faults, _ = strconv.ParseInt(f[1], 10, 64)
		pages, _ = strconv.ParseInt(f[2], 10, 64)
		return free, faults, pages
	}
	free, faults, pages := probe()
	if free < floor {
		t.Errorf("with the floor: %d MB of free heap resident, want the floor's %d MB", free>>20, floor>>20)
	}
	// Under the race detector every allocation also maps fresh shadow memory, which faults
	// whatever the heap did, so the faults are counted without it only.
	if !raceEnabled && faults > pages/4 {
		t.Errorf("with the floor: %d page faults writing %d pages, want at most a quarter", faults, pages)
	}
	free, faults, pages = probe("GOGC=100")
	if free >= floor/2 {
		t.Errorf("with GOGC set (no floor): %d MB of free heap resident, want a few", free>>20)
	}
	if !raceEnabled && faults < pages/2 {
		t.Errorf("with GOGC set (no floor): %d page faults writing %d pages, want at least half", faults, pages)
	}
}
