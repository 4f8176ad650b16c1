package agent_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
)

// loopGoroutines counts goroutines currently inside an agent loop.
func loopGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "core/agent.(*Agent).loop(")
}

func TestIdleAgentHoldsNoLoopGoroutine(t *testing.T) {
	p := llm.ScriptFunc(func(llm.Request) llm.Reply { return llm.Reply{Text: "ok"} })
	rt := agent.NewRuntime(p)
	agents := make([]*agent.Agent, 50)
	for i := range agents {
		a, err := rt.Create(agent.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Dispose(context.Background()) })
		agents[i] = a
	}
	if n := loopGoroutines(); n != 0 {
		t.Fatalf("%d loop goroutines for agents that never had work", n)
	}
	for _, a := range agents {
		_ = a.Send("hi")
	}
	for _, a := range agents {
		waitIdle(t, a)
	}
	waitFor(t, "every loop to exit once idle", func() bool { return loopGoroutines() == 0 })
	// A second turn starts a new loop and works as the first did.
	_ = agents[0].Send("again")
	waitIdle(t, agents[0])
	if got := countTurnEnds(agents[0].Session().Events()); got != 2 {
		t.Fatalf("%d turn ends, want 2", got)
	}
}

func countTurnEnds(events []agent.Event) int {
	n := 0
	for _, e := range events {
		if e.Kind == agent.KindTurnEnd {
			n++
		}
	}
	return n
}

func TestOnIdleCallback(t *testing.T) {
	for _, tc := range []struct {
		name string
		// act runs after the Send carrying OnIdle; it returns the reason the last turn must
		// have ended with ("" when no turn may be written).
		act  func(t *testing.T, a *agent.Agent) agent.TurnEndReason
		hang bool
	}{
		{"after a completed turn", func(*testing.T, *agent.Agent) agent.TurnEndReason { return agent.TurnCompleted }, false},
		{"after a cancel mid-turn", func(t *testing.T, a *agent.Agent) agent.TurnEndReason {
			waitFor(t, "the turn to run", func() bool { return a.Status() == agent.StatusRunning })
			a.Cancel("stop")
			return agent.TurnAborted
		}, true},
		{"after a dispose mid-turn", func(t *testing.T, a *agent.Agent) agent.TurnEndReason {
			waitFor(t, "the turn to run", func() bool { return a.Status() == agent.StatusRunning })
			if err := a.Dispose(context.Background()); err != nil {
				t.Fatal(err)
			}
			return agent.TurnDisposed
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := llm.ScriptFunc(func(llm.Request) llm.Reply { return llm.Reply{Text: "ok", Hang: tc.hang} })
			_, a := newAgent(t, p, agent.CreateOptions{})
			var calls atomic.Int32
			var sawIdle atomic.Bool
			done := make(chan struct{})
			err := a.SendInput(context.Background(), agent.Input{Content: "go", OnIdle: func() {
				sawIdle.Store(a.Status() != agent.StatusRunning && a.Status() != agent.StatusQueued)
				calls.Add(1)
				close(done)
			}})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.act(t, a)
			<-done
			if !sawIdle.Load() {
				t.Fatal("OnIdle ran before the agent was idle")
			}
			end, ok := lastTurnEnd(a.Session().Events())
			if !ok || end.Reason != want {
				t.Fatalf("last turn end %+v, want %s", end, want)
			}
			waitFor(t, "loops to exit", func() bool { return loopGoroutines() == 0 })
			if calls.Load() != 1 {
				t.Fatalf("OnIdle ran %d times", calls.Load())
			}
		})
	}
}

func TestOnIdleAtPreTurnCancelAndFromItsOwnCallback(t *testing.T) {
	// Cancel lands in the pre-turn window from a listener on the loop's goroutine (as in
	// TestCancelInPreTurnWindowSettlesWithoutTurnEnd): the second input's OnIdle still runs,
	// and it may dispose the agent without deadlocking.
	p := llm.ScriptFunc(func(llm.Request) llm.Reply { return llm.Reply{Text: "ok"} })
	rt := agent.NewRuntime(p)
	var b *agent.Agent
	var once atomic.Bool
	done := make(chan error, 1)
	rt.Listen(func(x *agent.Agent, e agent.Event) {
		if x == b && e.Kind == agent.KindTurnEnd && once.CompareAndSwap(false, true) {
			_ = x.SendInput(context.Background(), agent.Input{Content: "second", OnIdle: func() {
				done <- x.Dispose(context.Background())
			}})
			x.Cancel("pre-turn")
		}
	})
	b, err := rt.Create(agent.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Send("first")
	if err := <-done; err != nil {
		t.Fatalf("dispose from OnIdle: %v", err)
	}
	if b.Status() != agent.StatusDisposed || len(rt.List()) != 0 {
		t.Fatalf("status %s, %d agents registered", b.Status(), len(rt.List()))
	}
	if got := countTurnEnds(b.Session().Events()); got != 1 {
		t.Fatalf("%d turns written, want only the first", got)
	}
}

func TestDisposeIdleAgentUnregistersAtOnce(t *testing.T) {
	rt := agent.NewRuntime(llm.NewScripted())
	a, err := rt.Create(agent.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Dispose of an idle agent waits for nothing
	for range 2 {
		if err := a.Dispose(ctx); err != nil {
			t.Fatalf("dispose: %v", err)
		}
	}
	if _, ok := rt.Get(a.ID()); ok {
		t.Fatal("a disposed agent is still registered")
	}
	if err := a.Send("x"); !errors.Is(err, agent.ErrDisposed) {
		t.Fatalf("send after dispose: %v", err)
	}
}

func TestAgentValues(t *testing.T) {
	type k1 struct{}
	type k2 struct{ n int }
	rt := agent.NewRuntime(llm.NewScripted())
	a, err := rt.Create(agent.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Dispose(context.Background()) })
	if a.Value(k1{}) != nil {
		t.Fatal("value before Set")
	}
	a.Set(k1{}, "a")
	a.Set(k2{1}, "b")
	a.Set(k2{2}, "c")
	a.Set(k1{}, "a2") // replaces
	for _, tc := range []struct {
		key  any
		want any
	}{{k1{}, "a2"}, {k2{1}, "b"}, {k2{2}, "c"}, {k2{3}, nil}} {
		if got := a.Value(tc.key); got != tc.want {
			t.Fatalf("Value(%#v) = %v, want %v", tc.key, got, tc.want)
		}
	}
	a.Delete(k2{1})
	a.Delete(k2{9}) // absent: nothing happens
	if a.Value(k2{1}) != nil || a.Value(k2{2}) != "c" || a.Value(k1{}) != "a2" {
		t.Fatal("Delete removed the wrong value")
	}
}
