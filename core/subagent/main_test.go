package subagent

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a runtime with both backends registered on a service.
type fixture struct {
	rt    *agent.Runtime
	svc   *Service
	spawn *Backend
	fork  *Backend
	log   *syncBuffer
}

func newFixture(t *testing.T, p llm.Provider, retries ...int) *fixture {
	t.Helper()
	log := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(log, nil))
	f := &fixture{rt: agent.NewRuntime(p, agent.WithLogger(logger)), svc: NewService(logger), log: log}
	cfg := Config{}
	if len(retries) > 0 {
		cfg.StructuredNudgeRetries = &retries[0]
	}
	var err error
	if f.spawn, err = NewSpawn(f.rt, cfg); err != nil {
		t.Fatal(err)
	}
	if f.fork, err = NewFork(f.rt, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.spawn.Close)
	t.Cleanup(f.fork.Close)
	for _, b := range []*Backend{f.spawn, f.fork} {
		if err := f.svc.Register(b); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// parent creates a top-level agent disposed at cleanup.
func (f *fixture) parent(t *testing.T, o agent.CreateOptions) *agent.Agent {
	t.Helper()
	a, err := f.rt.Create(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Dispose(context.Background()) })
	return a
}

// start starts a run with the named backend and disposes it at cleanup.
func (f *fixture) start(t *testing.T, provider string, req StartRequest) *Run {
	t.Helper()
	run, err := f.svc.Start(context.Background(), provider, req)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = run.Dispose(context.Background()) })
	return run
}

// settle waits for a run's result.
func settle(t *testing.T, run *Run) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := run.Result(ctx)
	if err != nil {
		t.Fatalf("run %s did not settle: %v", run.ID(), err)
	}
	return res
}

func idle(t *testing.T, a *agent.Agent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.WhenIdle(ctx); err != nil {
		t.Fatalf("WhenIdle: %v", err)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, cond)
}

func capture(id, args string) llm.Reply {
	return llm.Reply{ToolCalls: []llm.ToolCall{{ID: id, Name: StructuredOutputTool, Arguments: args}}}
}

func findTool(req llm.Request, name string) (llm.ToolSpec, int) {
	var spec llm.ToolSpec
	n := 0
	for _, t := range req.Tools {
		if t.Name == name {
			spec, n = t, n+1
		}
	}
	return spec, n
}

func lastUser(req llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

func toolResultsOf(events []agent.Event) []agent.Event {
	var out []agent.Event
	for _, e := range events {
		if e.Kind == agent.KindToolResult {
			out = append(out, e)
		}
	}
	return out
}

func countKind(events []agent.Event, k agent.Kind) int {
	n := 0
	for _, e := range events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) contains(sub string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Contains(s.b.String(), sub)
}

const answerSchema = `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`
