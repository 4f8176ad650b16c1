package subagent

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
)

// The caller's context is a cancel like Run.Cancel (SUBAGENT-SPEC.md steps 7–9), and it counts
// the moment it ends: every decision — nudge or not, send or not, how a clean finish without a
// capture settles — reads it, so the outcome never depends on when context.AfterFunc's goroutine
// gets to run. Each test ends the caller's context at one decision point, many times over.

const ctxRounds = 50

// startWithCtxEndingAtTurnEnd starts a run whose caller's context ends as the child's first own
// turn ends (from the runtime's event listener, before the driver sees the child idle).
func startWithCtxEndingAtTurnEnd(t *testing.T, f *fixture, gate chan struct{}, req StartRequest) *Run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var run atomic.Pointer[Run]
	var once atomic.Bool
	f.rt.Listen(func(a *agent.Agent, e agent.Event) {
		if r := run.Load(); r != nil && a == r.Agent() && e.Kind == agent.KindTurnEnd && once.CompareAndSwap(false, true) {
			cancel()
		}
	})
	r, err := f.svc.Start(ctx, "spawn", req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Dispose(context.Background()) })
	run.Store(r)
	close(gate) // the model answers only once the listener knows the run
	return r
}

func TestCallerCtxEndingAsStructuredTurnEndsSettlesAborted(t *testing.T) {
	for i := 0; i < ctxRounds; i++ {
		f, p, gate := gatedFixture(t, 0)
		r := startWithCtxEndingAtTurnEnd(t, f, gate, StartRequest{Prompt: "go", OutputSchema: json.RawMessage(answerSchema)})
		res := settle(t, r)
		if res.StopReason != StopAborted || p.Calls() != 1 {
			t.Fatalf("round %d: result %+v after %d requests; want aborted", i, res, p.Calls())
		}
	}
}

func TestCallerCtxEndingAsStructuredTurnEndsStartsNoNudge(t *testing.T) {
	for i := 0; i < ctxRounds; i++ {
		f, p, gate := gatedFixture(t, 3)
		r := startWithCtxEndingAtTurnEnd(t, f, gate, StartRequest{Prompt: "go", OutputSchema: json.RawMessage(answerSchema)})
		res := settle(t, r)
		if res.StopReason != StopAborted || p.Calls() != 1 {
			t.Fatalf("round %d: result %+v after %d requests; want aborted and no nudge", i, res, p.Calls())
		}
		for _, e := range r.Agent().Session().Events() {
			if e.Kind == agent.KindUserMessage && e.Source == "nudge" {
				t.Fatalf("round %d: a nudge turn was started after the caller's context ended", i)
			}
		}
	}
}

func TestCallerCtxEndingAfterCompletedPlainTurnStaysCompleted(t *testing.T) {
	for i := 0; i < ctxRounds; i++ {
		f, _, gate := gatedFixture(t, 1)
		r := startWithCtxEndingAtTurnEnd(t, f, gate, StartRequest{Prompt: "go"})
		if res := settle(t, r); res.StopReason != StopCompleted || res.Output != "prose, no capture" {
			t.Fatalf("round %d: result %+v; want completed with its output", i, res)
		}
	}
}

// gatedFixture is a fixture whose model answers prose (no capture) once gate is closed.
func gatedFixture(t *testing.T, retries int) (*fixture, *llm.Scripted, chan struct{}) {
	t.Helper()
	gate := make(chan struct{})
	p := llm.ScriptFunc(func(llm.Request) llm.Reply {
		<-gate
		return llm.Reply{Text: "prose, no capture"}
	})
	return newFixture(t, p, retries), p, gate
}
