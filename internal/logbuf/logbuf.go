// Package logbuf is the log sink tests give the loggers of code that logs from many goroutines:
// a buffer safe for concurrent writes, read whole once the test wants to look at it.
package logbuf

import (
	"bytes"
	"sync"
)

// Buffer collects what is written to it; Write and String may be called from any goroutine.
// The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
