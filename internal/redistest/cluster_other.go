//go:build !linux

package redistest

import "os/exec"

// dieWithParent has no portable equivalent outside Linux; TestMain's clean-up stops the nodes.
func dieWithParent(*exec.Cmd) {}
