// Package redistest runs a private redis-server for tests that need to stop and restart Redis
// under a running process: outage and chaos tests. The server has its own port and data
// directory, writes every command to its append-only file before answering (appendfsync
// always), so a restart on the same directory — after SIGTERM or SIGKILL — replays every
// acknowledged write. It is killed when the test ends.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long Start and Restart wait for the server to answer PING.
const startTimeout = 20 * time.Second

// Server is one private redis-server. Its methods are safe for concurrent use.
type Server struct {
	tb    testing.TB
	bin   string
	dir   string
	port  int
	fsync string // appendfsync: always, everysec or no

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited and been waited for
	logs *os.File
}

// Start launches redis-server on a free port with AOF on in a fresh t.TempDir and waits until it
// answers. The test fails at once when redis-server is not on PATH or does not start. The server
// is killed (SIGKILL) when the test ends, whatever state it is in.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return StartFsync(tb, "always")
}

// StartFsync is Start with the append-only file's appendfsync policy: "always" (Start's),
// "everysec" (Redis's default: a write is in the file before it is answered but fsynced within
// about a second) or "no".
func StartFsync(tb testing.TB, appendfsync string) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("redistest: redis-server is not on PATH (CI's .ci/run installs it): %v", err)
	}
	s := &Server{tb: tb, bin: bin, dir: tb.TempDir(), port: freePort(tb), fsync: appendfsync}
	tb.Cleanup(func() { s.stop(syscall.SIGKILL) })
	s.Restart()
	return s
}

// Addr is host:port of the server (the same across restarts).
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the server's redis:// URL, database 0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Dir is the server's data directory (the append-only file lives under it).
func (s *Server) Dir() string { return s.dir }

// Running reports whether the server process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Stop sends sig (syscall.SIGTERM: Redis flushes and exits; syscall.SIGKILL: it dies at once)
// and waits until the process has exited and its port is closed. Stopping a stopped server does
// nothing.
func (s *Server) Stop(sig syscall.Signal) {
	s.tb.Helper()
	if err := s.stop(sig); err != nil {
		s.tb.Fatalf("redistest: stopping redis-server on %s: %v", s.Addr(), err)
	}
}

func (s *Server) stop(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	if err := s.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-s.done:
	case <-time.After(startTimeout):
		// SIGTERM may wait on a slow disk; a server that does not exit is killed.
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
	if s.logs != nil {
		_ = s.logs.Close()
		s.logs = nil
	}
	return nil
}

// Restart starts the server again on the same port and directory — Redis replays the
// append-only file, so every write it acknowledged before stopping is back — and waits until it
// answers PING. A running server is left as it is.
func (s *Server) Restart() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	logs, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.tb.Fatalf("redistest: %v", err)
	}
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--appendonly", "yes", "--appendfsync", s.fsync, "--save", "",
		"--daemonize", "no", "--protected-mode", "no")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		_ = logs.Close()
		s.tb.Fatalf("redistest: starting redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done, s.logs = cmd, done, logs
	deadline := time.Now().Add(startTimeout)
	for {
		err := ping(s.Addr())
		if err == nil {
			return
		}
		select {
		case <-done:
			s.cmd = nil
			s.tb.Fatalf("redistest: redis-server exited at start; its log:\n%s", s.logTail())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("redistest: redis-server on %s did not answer within %s: %v; its log:\n%s", s.Addr(), startTimeout, err, s.logTail())
		}
	}
}

// logTail is the end of the server's log, for failure messages.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// ping sends PING in RESP and reports whether PONG came back. A server still loading its
// append-only file answers -LOADING, which is not ready.
func ping(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// freePort asks the kernel for a free TCP port on the loopback interface.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: finding a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
