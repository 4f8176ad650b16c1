//go:build linux

package slackfake

import (
	"net"
	"syscall"
	"unsafe"
)

// poll(2) events, the same on every Linux architecture.
const (
	pollERR   = 0x8
	pollHUP   = 0x10
	pollRDHUP = 0x2000
)

type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

// peerClosed reports whether the client already closed conn — its FIN or reset has reached the
// kernel — even while unread frames wait before it and the goroutine reading conn has not been
// scheduled to see it yet. It asks poll(2) with a zero timeout, so it never blocks.
func peerClosed(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	err = raw.Control(func(fd uintptr) {
		fds := [1]pollFd{{fd: int32(fd), events: pollRDHUP}}
		var zero syscall.Timespec
		n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
		closed = errno == 0 && n == 1 && fds[0].revents&(pollRDHUP|pollHUP|pollERR) != 0
	})
	return closed || err != nil // err: closed here meanwhile
}
