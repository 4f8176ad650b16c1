//go:build linux

package tools

import "syscall"

// setDeathSignal has the kernel kill the server when the bot dies without stopping it (kill -9).
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
