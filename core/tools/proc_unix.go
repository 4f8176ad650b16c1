//go:build unix

package tools

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the server in a process group of its own, so that stopping it also stops
// whatever it started (npx starts node), and nothing is left behind.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
}

// killGroup kills what is left of the server's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
