package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// transcript collects a process's output and lets a test wait for text in it.
type transcript struct {
	mu   sync.Mutex
	text strings.Builder
	cond *sync.Cond
	done bool
}

func newTranscript(r io.Reader) *transcript {
	t := &transcript{}
	t.cond = sync.NewCond(&t.mu)
	go func() {
		br := bufio.NewReader(r)
		buf := make([]byte, 4096)
		for {
			n, err := br.Read(buf)
			t.mu.Lock()
			t.text.Write(buf[:n])
			if err != nil {
				t.done = true
			}
			t.cond.Broadcast()
			t.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return t
}

// waitFor blocks until the output after offset from contains want, and returns the offset just
// past it. It fails the test after the deadline or when the output ends without it.
func (tr *transcript) waitFor(t *testing.T, from int, want string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	timer := time.AfterFunc(30*time.Second, func() {
		tr.mu.Lock()
		tr.cond.Broadcast()
		tr.mu.Unlock()
	})
	defer timer.Stop()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for {
		s := tr.text.String()
		if i := strings.Index(s[from:], want); i >= 0 {
			return from + i + len(want)
		}
		if tr.done || time.Now().After(deadline) {
			t.Fatalf("output never showed %q; it was:\n%s", want, s)
		}
		tr.cond.Wait()
	}
}

func (tr *transcript) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.text.String()
}

// TestChatBinaryEndToEnd builds `bot`, runs `bot chat` with no configuration at all through
// pipes, asks something vague, answers the clarification by typing an option's number, and
// reads the final answer — the whole path: console → router → signed envelope → queue (embedded
// store) → worker → lead chain (demo model) → delivery → console.
func TestChatBinaryEndToEnd(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(buildBot(t), "chat")
	// A fresh machine: no model key, no BOT_ settings.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	out := newTranscript(stdout)

	at := out.waitFor(t, 0, "demo model")
	if _, err := io.WriteString(stdin, "/whoami\n"); err != nil {
		t.Fatal(err)
	}
	at = out.waitFor(t, at, "You are `local`")

	if _, err := io.WriteString(stdin, "help me\n"); err != nil {
		t.Fatal(err)
	}
	at = out.waitFor(t, at, "2. Plan a task")
	at = out.waitFor(t, at, "Reply 1–3 or type your answer.")

	if _, err := io.WriteString(stdin, "2\n"); err != nil {
		t.Fatal(err)
	}
	at = out.waitFor(t, at, "Answer")
	out.waitFor(t, at, "Plan a task")

	if err := stdin.Close(); err != nil { // Ctrl-D: the bot drains and exits
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("bot chat exited with %v; output:\n%s", err, out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("bot chat did not exit after end of input; output:\n%s", out)
	}
	if strings.Contains(out.String(), "panic") {
		t.Fatalf("output mentions a panic:\n%s", out)
	}
}

// buildBot builds the bot binary into a temporary directory and returns its path.
func buildBot(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bot")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = os.Environ()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestChatAnswersPipedInputThenExits proves `bot chat` with its input piped answers every line
// before it quits at the end of the input — it does not drop the runs still queued.
func TestChatAnswersPipedInputThenExits(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildBot(t), "chat")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	cmd.Stdin = strings.NewReader("/whoami\nhelp me\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bot chat exited with %v; output:\n%s", err, out)
	}
	for _, want := range []string{"You are `local`", "2. Plan a task"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestChatBinaryQuitsOnCtrlC proves the signal wiring of the real binary: Ctrl-C (SIGINT, sent
// to the child process) while `bot chat` is idle quits it at once with exit code 0.
func TestChatBinaryQuitsOnCtrlC(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(buildBot(t), "chat")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	out := newTranscript(stdout)
	at := out.waitFor(t, 0, "Ctrl-D quits.")
	if _, err := io.WriteString(stdin, "/whoami\n"); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, at, "You are `local`")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("bot chat exited with %v after Ctrl-C; output:\n%s", err, out)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("bot chat did not quit on Ctrl-C; output:\n%s", out)
	}
}
