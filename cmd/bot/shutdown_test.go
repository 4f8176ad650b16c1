package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/adapters/console"
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

// stopRecorder is a channel wrapper that notes when the channel was stopped.
type stopRecorder struct {
	*console.Channel
	mu      sync.Mutex
	stopped bool
}

func (s *stopRecorder) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	return s.Channel.Stop(ctx)
}

func (s *stopRecorder) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) (channels.MessageRef, error) {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return ref, errors.New("edit after the channel was stopped")
	}
	return s.Channel.Edit(ctx, ref, m)
}

func (s *stopRecorder) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, cond)
}

// TestShutdownOrder proves the ordered drain: once shutdown begins no new message is accepted,
// the run in flight finishes and its answer is delivered while the channel is still up, then the
// channel stops, and nothing is left running.
func TestShutdownOrder(t *testing.T) {
	// Not parallel: goleak looks at every goroutine of the process.
	defer goleak.VerifyNone(t)

	release := make(chan struct{})
	model := modelserver.Start()
	defer model.Close()
	model.SetFunc(func(modelserver.Request) modelserver.Reply {
		<-release
		return modelserver.Text("the slow answer")
	})

	cfg := config.Default()
	cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.APIKey = config.ProviderOpenAI, model.BaseURL(), "test"
	cfg.HTTP.Addr = ""
	inR, inW := io.Pipe()
	out := &syncBuffer{}
	con := &stopRecorder{Channel: console.New(console.Options{In: inR, Out: out})}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := newApp(ctx, cfg, log, con)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(inW, "please answer slowly\n"); err != nil {
		t.Fatal(err)
	}
	waitCond(t, "the run to reach the model", func() bool { return model.Count() == 1 })

	done := make(chan error, 1)
	go func() { done <- drain(a, log, 20*time.Second) }()

	// 1. Intake stops first.
	waitCond(t, "intake to stop", func() bool { return !a.intake.Load() })
	err = a.HandleInbound(ctx, con, channels.Inbound{EventID: "late", Conv: console.Conv, Text: "late", Direct: true, AddressesBot: true})
	if !errors.Is(err, errShuttingDown) {
		t.Fatalf("a message during shutdown: %v, want errShuttingDown", err)
	}
	// 2. The workers drain while the channel stays up.
	if con.isStopped() {
		t.Fatal("the channel stopped before the run in flight finished")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	// 3. The answer went out before the channel stopped; then the channel stopped.
	if !strings.Contains(out.String(), "the slow answer") {
		t.Fatalf("the in-flight answer was not delivered:\n%s", out)
	}
	if !con.isStopped() {
		t.Fatal("the channel was not stopped")
	}
	_ = inW.Close() // ends the console's reader
	cancel()
}
