//go:build amd64 || arm64

package growstack

// Grow makes sure the calling goroutine's stack has at least Size bytes free below the caller's
// frame: its frame is Size bytes that it never touches, so when the stack has room it costs a
// call, and when not the stack is grown once, here, and no page of the new room is written.
//
//go:noescape
func Grow()
