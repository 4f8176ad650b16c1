//go:build unix && !linux

package tools

import "syscall"

func setDeathSignal(*syscall.SysProcAttr) {}
