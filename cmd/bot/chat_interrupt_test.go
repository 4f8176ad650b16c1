package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	"github.com/switchboard-bot/switchboard/internal/poll"
)

// chatSession is `bot chat` running in the test's process on a fake model and the embedded
// store, with its input, output and Ctrl-C in the test's hands.
type chatSession struct {
	t          *testing.T
	model      *modelserver.Server
	in         *io.PipeWriter
	out        *syncBuffer
	interrupts chan os.Signal
	done       chan error
}

// startChat starts chat with a model that answers "echo: …" except to messages containing
// "slowly", which it never answers (until the request is cancelled).
func startChat(t *testing.T) *chatSession {
	t.Helper()
	model := modelserver.Start()
	t.Cleanup(model.Close)
	model.SetFunc(func(r modelserver.Request) modelserver.Reply {
		if strings.Contains(r.LastUserText(), "slowly") {
			return modelserver.Hang()
		}
		return modelserver.Text("echo: " + r.LastUserText())
	})
	cfg := config.Default()
	cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.APIKey = config.ProviderOpenAI, model.BaseURL(), "test"
	inR, inW := io.Pipe()
	s := &chatSession{t: t, model: model, in: inW, out: &syncBuffer{}, interrupts: make(chan os.Signal, 1), done: make(chan error, 1)}
	go func() { s.done <- chat(context.Background(), cfg, inR, s.out, io.Discard, s.interrupts) }()
	t.Cleanup(func() { _ = inW.Close() }) // ends the console's reader, which a quit leaves in Read
	s.waitOutput("Type a message")
	return s
}

func (s *chatSession) typeLine(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

func (s *chatSession) waitOutput(want string) {
	s.t.Helper()
	poll.Until(s.t, "the terminal to show "+want, func() bool { return strings.Contains(s.out.String(), want) })
}

// waitQuit waits for chat to return and fails unless it returned nil (exit code 0).
func (s *chatSession) waitQuit(within time.Duration) {
	s.t.Helper()
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Fatalf("chat returned %v, want nil (exit 0); output:\n%s", err, s.out)
		}
	case <-time.After(within):
		s.t.Fatalf("chat did not quit within %v; output:\n%s", within, s.out)
	}
}

func (s *chatSession) running() bool {
	select {
	case err := <-s.done:
		s.done <- err
		return false
	default:
		return true
	}
}

// TestChatFirstInterruptCancelsTheRun proves a Ctrl-C while the bot works on a reply cancels that
// run — as /cancel does, and says so, with how to quit — and leaves `bot chat` running: the next
// message is answered.
func TestChatFirstInterruptCancelsTheRun(t *testing.T) {
	// Not parallel: goleak looks at every goroutine of the process.
	t.Cleanup(func() { goleak.VerifyNone(t) })
	s := startChat(t)
	s.typeLine("answer me slowly")
	poll.Until(t, "the run to reach the model", func() bool { return s.model.Count() == 1 })

	s.interrupts <- os.Interrupt
	s.waitOutput("Cancelled 1 request.")
	s.waitOutput("Press Ctrl-C again to quit")
	s.waitOutput("— Cancelled ·") // the run's own card ends as cancelled
	if !s.running() {
		t.Fatalf("bot chat quit on the first Ctrl-C during a run; output:\n%s", s.out)
	}

	s.typeLine("are you still there?")
	s.waitOutput("echo: are you still there?")
	if strings.Contains(s.out.String(), "echo: answer me slowly") {
		t.Errorf("the cancelled run was answered anyway:\n%s", s.out)
	}
	_ = s.in.Close() // Ctrl-D
	s.waitQuit(30 * time.Second)
}

// TestChatSecondInterruptQuits proves Ctrl-C quits `bot chat` at once — exit 0, nothing left
// running — when nothing is running, and when pressed a second time right after one that
// cancelled a run.
func TestChatSecondInterruptQuits(t *testing.T) {
	// Not parallel: goleak looks at every goroutine of the process.
	t.Run("while idle", func(t *testing.T) {
		t.Cleanup(func() { goleak.VerifyNone(t) })
		s := startChat(t)
		s.typeLine("hello")
		s.waitOutput("echo: hello")
		// The run is over once the queue says so, a moment after its answer.
		poll.Until(t, "/status to say the chat is idle", func() bool {
			before := len(s.out.String())
			s.typeLine("/status")
			poll.Until(t, "the reply to /status", func() bool { return strings.Contains(s.out.String()[before:], "bot> ") })
			return strings.Contains(s.out.String()[before:], "Idle")
		})
		s.interrupts <- os.Interrupt
		s.waitQuit(10 * time.Second)
		if strings.Contains(s.out.String(), "Cancelled") || strings.Contains(s.out.String(), "Nothing to cancel") {
			t.Errorf("an idle Ctrl-C tried to cancel instead of quitting:\n%s", s.out)
		}
		_ = s.in.Close()
	})
	t.Run("twice during a run", func(t *testing.T) {
		t.Cleanup(func() { goleak.VerifyNone(t) })
		s := startChat(t)
		s.typeLine("answer me slowly")
		poll.Until(t, "the run to reach the model", func() bool { return s.model.Count() == 1 })
		s.interrupts <- os.Interrupt
		s.waitOutput("Press Ctrl-C again to quit")
		s.interrupts <- os.Interrupt
		s.waitQuit(10 * time.Second)
		_ = s.in.Close()
	})
	t.Run("twice at once while a reply and more are queued", func(t *testing.T) {
		t.Cleanup(func() { goleak.VerifyNone(t) })
		s := startChat(t)
		s.typeLine("answer me slowly")
		s.typeLine("and then this slowly too")
		poll.Until(t, "the run to reach the model", func() bool { return s.model.Count() == 1 })
		s.interrupts <- os.Interrupt
		s.interrupts <- os.Interrupt // before the first is handled
		s.waitQuit(10 * time.Second)
		_ = s.in.Close()
	})
}
