package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill a cluster node if the test binary dies without running
// TestMain's clean-up (a panic, a -timeout), so no redis-server outlives the tests.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
