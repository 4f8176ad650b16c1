package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newAgent(t *testing.T, p llm.Provider, o agent.CreateOptions) (*agent.Runtime, *agent.Agent) {
	t.Helper()
	rt := agent.NewRuntime(p)
	a, err := rt.Create(o)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = a.Dispose(context.Background()) })
	return rt, a
}

func waitIdle(t *testing.T, a *agent.Agent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
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

func kinds(events []agent.Event) string {
	var b strings.Builder
	for i, e := range events {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(string(e.Kind))
	}
	return b.String()
}

func lastTurnEnd(events []agent.Event) (agent.Event, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == agent.KindTurnEnd {
			return events[i], true
		}
	}
	return agent.Event{}, false
}

func TestSendThenWhenIdleOrdering(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Text: "hello there"})
	_, a := newAgent(t, p, agent.CreateOptions{})
	if err := a.Send("hi"); err != nil {
		t.Fatal(err)
	}
	// Send enqueued synchronously, so WhenIdle must wait for the turn, never return before it.
	waitIdle(t, a)
	ev := a.Session().Events()
	want := "turn/start user/message step/start assistant/chunk assistant/chunk assistant/message step/end turn/end"
	if got := kinds(ev); got != want {
		t.Fatalf("events = %s\nwant     %s", got, want)
	}
	end, _ := lastTurnEnd(ev)
	if end.Reason != agent.TurnCompleted || ev[5].Content != "hello there" {
		t.Fatalf("turn end %+v, message %q", end, ev[5].Content)
	}
	for i, e := range ev {
		if e.Seq != i {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

func TestWhenIdleOnIdleAgentReturnsAtOnce(t *testing.T) {
	_, a := newAgent(t, llm.NewScripted(), agent.CreateOptions{})
	waitIdle(t, a)
	if a.Status() != agent.StatusIdle {
		t.Fatalf("status %s", a.Status())
	}
}

func TestCancelInPreTurnWindowSettlesWithoutTurnEnd(t *testing.T) {
	// Send then Cancel races the loop picking the prompt up. Whichever wins, WhenIdle settles,
	// and when the cancel landed first (the pre-turn window) no turn is written at all.
	p := llm.ScriptFunc(func(llm.Request) llm.Reply { return llm.Reply{Text: "ok"} })
	rt := agent.NewRuntime(p)
	preTurn := 0
	for i := 0; i < 200; i++ {
		a, err := rt.Create(agent.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = a.Send("queued")
		a.Cancel("before start")
		waitIdle(t, a)
		evs := a.Session().Events()
		if len(evs) == 0 {
			preTurn++
		} else if end, ok := lastTurnEnd(evs); !ok || (end.Reason != agent.TurnAborted && end.Reason != agent.TurnCompleted) {
			t.Fatalf("a started turn must end aborted or completed: %s", kinds(evs))
		}
		_ = a.Dispose(context.Background())
	}
	if preTurn == 0 {
		t.Log("the loop won every race; the deterministic case below still covers the window")
	}

	// Deterministic: queue and cancel from a listener that runs on the loop's goroutine while
	// turn 1 closes, before the loop can look at the queue again.
	var b *agent.Agent
	var once atomic.Bool
	rt.Listen(func(x *agent.Agent, e agent.Event) {
		if x == b && e.Kind == agent.KindTurnEnd && once.CompareAndSwap(false, true) {
			_ = x.Send("second")
			x.Cancel("pre-turn")
		}
	})
	b, err := rt.Create(agent.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Dispose(context.Background()) }()
	_ = b.Send("first")
	waitFor(t, "the listener to fire", once.Load)
	waitIdle(t, b)
	evs := b.Session().Events()
	starts := 0
	for _, e := range evs {
		if e.Kind == agent.KindTurnStart {
			starts++
		}
	}
	if starts != 1 {
		t.Fatalf("the cancelled prompt started a turn: %s", kinds(evs))
	}
}

func TestCancelQueuedWorkWritesNoTurn(t *testing.T) {
	// The loop is parked inside a hanging model call of turn 1; turn 2 is queued behind it.
	// Cancel clears the queue (turn 2 never starts) and aborts turn 1.
	p := llm.NewScripted(llm.Reply{Hang: true}, llm.Reply{Text: "never"})
	_, a := newAgent(t, p, agent.CreateOptions{})
	_ = a.Send("one")
	waitFor(t, "turn 1 at the model", func() bool { return p.Calls() == 1 })
	_ = a.Send("two")
	a.Cancel("user pressed stop")
	waitIdle(t, a)
	ev := a.Session().Events()
	starts := 0
	for _, e := range ev {
		if e.Kind == agent.KindTurnStart {
			starts++
		}
	}
	if starts != 1 || p.Calls() != 1 {
		t.Fatalf("queued turn ran: starts=%d calls=%d (%s)", starts, p.Calls(), kinds(ev))
	}
	if end, _ := lastTurnEnd(ev); end.Reason != agent.TurnAborted {
		t.Fatalf("turn end %+v", end)
	}
}

func TestCancelOnIdleAgentDoesNotArm(t *testing.T) {
	_, a := newAgent(t, llm.NewScripted(llm.Reply{Text: "ok"}), agent.CreateOptions{})
	a.Cancel("nothing to cancel")
	_ = a.Send("go")
	waitIdle(t, a)
	if end, _ := lastTurnEnd(a.Session().Events()); end.Reason != agent.TurnCompleted {
		t.Fatalf("a cancel on an idle agent leaked into the next turn: %+v", end)
	}
}

func TestDisposeSequence(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Hang: true})
	rt, a := newAgent(t, p, agent.CreateOptions{})
	_ = a.Send("hang")
	waitFor(t, "the model call", func() bool { return p.Calls() == 1 })
	if _, ok := rt.Get(a.ID()); !ok {
		t.Fatal("agent not in the registry")
	}
	if err := a.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
	end, ok := lastTurnEnd(a.Session().Events())
	if !ok || end.Reason != agent.TurnDisposed {
		t.Fatalf("closing turn end = %+v", end)
	}
	if _, ok := rt.Get(a.ID()); ok {
		t.Fatal("disposed agent still in the registry")
	}
	if err := a.Send("again"); !errors.Is(err, agent.ErrDisposed) {
		t.Fatalf("Send after dispose = %v, want ErrDisposed", err)
	}
	if err := a.Dispose(context.Background()); err != nil {
		t.Fatalf("second dispose: %v", err)
	}
	if a.Status() != agent.StatusDisposed {
		t.Fatalf("status %s", a.Status())
	}
	waitIdle(t, a)
}

func TestSeedCopyAndSeqContinuity(t *testing.T) {
	seed := []agent.Event{
		{Seq: 0, Kind: agent.KindTurnStart, Turn: 1, Trigger: "user"},
		{Seq: 1, Kind: agent.KindUserMessage, Turn: 1, Content: "parent question"},
		{Seq: 2, Kind: agent.KindAssistantMessage, Turn: 1, Step: 1, Content: "parent answer"},
		{Seq: 3, Kind: agent.KindTurnEnd, Turn: 1, Reason: agent.TurnCompleted},
	}
	p := llm.NewScripted(llm.Reply{Text: "child answer"})
	_, a := newAgent(t, p, agent.CreateOptions{Seed: seed})
	seed[1].Content = "mutated after create"
	_ = a.Send("child question")
	waitIdle(t, a)
	ev := a.Session().Events()
	if ev[1].Content != "parent question" {
		t.Fatal("the seed was not copied")
	}
	if a.Session().Header().SeedLength != 4 {
		t.Fatalf("seed length %d", a.Session().Header().SeedLength)
	}
	for i, e := range ev {
		if e.Seq != i {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	if ev[4].Kind != agent.KindTurnStart || ev[4].Turn != 2 {
		t.Fatalf("turn numbers must continue after the seed: %+v", ev[4])
	}
	// The model saw the seeded history.
	req := p.Requests()[0]
	if len(req.Messages) != 3 || req.Messages[0].Content != "parent question" || req.Messages[2].Content != "child question" {
		t.Fatalf("messages %+v", req.Messages)
	}
	// Readers get copies.
	ev[0].Content = "changed by a reader"
	if a.Session().Events()[0].Content != "" {
		t.Fatal("a reader changed the frozen log")
	}
}

// TestShareSeedReadsTheCallersEvents: with ShareSeed the session reads the seed in place (no
// copy: a change the caller must not make would show) and writes its own events elsewhere,
// never into the seed's spare capacity; sequence, turn numbers, the model's history and a fork
// of it are as with a copied seed.
func TestShareSeedReadsTheCallersEvents(t *testing.T) {
	seed := make([]agent.Event, 2, 32)
	seed[0] = agent.Event{Seq: 0, Kind: agent.KindUserMessage, Turn: 1, Content: "earlier question"}
	seed[1] = agent.Event{Seq: 1, Kind: agent.KindTurnEnd, Turn: 1, Reason: agent.TurnCompleted}
	p := llm.NewScripted(llm.Reply{Text: "answer"}, llm.Reply{Text: "fork answer"})
	rt, a := newAgent(t, p, agent.CreateOptions{Seed: seed, ShareSeed: true})
	if got := a.Session().Events()[0].Content; got != "earlier question" {
		t.Fatalf("seeded content %q", got)
	}
	_ = a.Send("question")
	waitIdle(t, a)
	if spare := seed[:3][2]; spare != (agent.Event{}) {
		t.Errorf("the session wrote into the seed's spare capacity: %+v", spare)
	}
	ev := a.Session().Events()
	if a.Session().Header().SeedLength != 2 || len(ev) < 4 || ev[2].Kind != agent.KindTurnStart || ev[2].Turn != 2 {
		t.Fatalf("log %+v", ev)
	}
	for i, e := range ev {
		if e.Seq != i {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	if req := p.Requests()[0]; len(req.Messages) != 2 || req.Messages[0].Content != "earlier question" {
		t.Fatalf("messages %+v", req.Messages)
	}
	fork, err := rt.Create(agent.CreateOptions{ForkFrom: a.Session()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fork.Dispose(context.Background()) })
	if got := fork.Session().Events(); len(got) != len(ev) || got[0].Content != "earlier question" || got[len(got)-1] != ev[len(ev)-1] {
		t.Fatalf("fork of a shared-seed session has %+v, want %+v", got, ev)
	}
	seed[0].Content = "changed in place"
	if got := a.Session().Events()[0].Content; got != "changed in place" {
		t.Errorf("the seed was copied: the session still reads %q", got)
	}
}

func TestSeedMustBeContiguous(t *testing.T) {
	rt := agent.NewRuntime(llm.NewScripted())
	_, err := rt.Create(agent.CreateOptions{Seed: []agent.Event{{Seq: 1, Kind: agent.KindTurnStart}}})
	var se *agent.SeedError
	if !errors.As(err, &se) || se.Index != 0 {
		t.Fatalf("err = %v", err)
	}
}

func TestPrependOrderingAndReplacingDownstreamHook(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Text: "ok"})
	rt, a := newAgent(t, p, agent.CreateOptions{Options: agent.Options{System: []string{"base"}}})
	var order []string
	// Registered first, appended: runs innermost-but-one; replaces the whole request.
	rt.UseRequestHook(func(ctx context.Context, a *agent.Agent, req llm.Request, next agent.RequestNext) (llm.Request, error) {
		order = append(order, "replacer")
		out, err := next(ctx, req)
		return llm.Request{Messages: out.Messages, System: []string{"replaced"}}, err
	}, false)
	// Prepended: outermost, sees what the replacer returned and has the last word.
	rt.UseRequestHook(func(ctx context.Context, a *agent.Agent, req llm.Request, next agent.RequestNext) (llm.Request, error) {
		order = append(order, "outer")
		out, err := next(ctx, req)
		out.System = append(out.System, "outer section")
		return out, err
	}, true)
	reg := rt.UseRequestHook(func(ctx context.Context, a *agent.Agent, req llm.Request, next agent.RequestNext) (llm.Request, error) {
		order = append(order, "removed")
		return next(ctx, req)
	}, false)
	reg.Remove()
	reg.Remove() // idempotent
	_ = a.Send("hi")
	waitIdle(t, a)
	if strings.Join(order, ",") != "outer,replacer" {
		t.Fatalf("hook order %v", order)
	}
	got := p.Requests()[0].System
	if strings.Join(got, "|") != "replaced|outer section" {
		t.Fatalf("system = %v", got)
	}
}

func echoTool(calls *atomic.Int32) agent.Tool {
	return agent.Tool{
		Name:        "echo",
		Description: "echoes text",
		Parameters:  []byte(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
		Execute: func(ctx context.Context, c agent.ToolCall) agent.ToolResult {
			calls.Add(1)
			return agent.ToolResult{Content: "echo: " + string(c.Arguments)}
		},
	}
}

func toolResults(ev []agent.Event) []agent.Event {
	var out []agent.Event
	for _, e := range ev {
		if e.Kind == agent.KindToolResult {
			out = append(out, e)
		}
	}
	return out
}

func TestDeniedToolCallVisibleToModel(t *testing.T) {
	p := llm.NewScripted(
		llm.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"text":"x"}`}}},
		llm.Reply{Text: "done"},
	)
	var calls atomic.Int32
	rt, a := newAgent(t, p, agent.CreateOptions{})
	if _, err := rt.RegisterTool(echoTool(&calls)); err != nil {
		t.Fatal(err)
	}
	rt.UsePreToolHook(func(ctx context.Context, a *agent.Agent, c agent.ToolCall, next agent.PreToolNext) agent.Verdict {
		return agent.Verdict{Deny: true, Reason: "not today"}
	}, false)
	_ = a.Send("call echo")
	waitIdle(t, a)
	if calls.Load() != 0 {
		t.Fatal("a denied tool ran")
	}
	r := toolResults(a.Session().Events())
	if len(r) != 1 || !r[0].IsError || r[0].Code != agent.CodeDenied || !strings.Contains(r[0].Content, "not today") {
		t.Fatalf("results %+v", r)
	}
	second := p.Requests()[1].Messages
	last := second[len(second)-1]
	if last.Role != llm.RoleTool || last.ToolCallID != "c1" || !strings.Contains(last.Content, "not today") {
		t.Fatalf("the model did not see the denial: %+v", last)
	}
}

func TestInvalidToolArguments(t *testing.T) {
	cases := []struct{ name, args, want string }{
		{"not json", `{"text":`, "not valid JSON"},
		{"wrong type", `{"text":3}`, "value.text must be string"},
		{"missing required", `{}`, "value.text is required"},
		{"undeclared property", `{"text":"a","x":1}`, "value.x is not allowed"},
		{"not an object", `[1]`, "value must be object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := llm.NewScripted(
				llm.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "echo", Arguments: tc.args}}},
				llm.Reply{Text: "fine"},
			)
			var calls atomic.Int32
			rt, a := newAgent(t, p, agent.CreateOptions{})
			if _, err := rt.RegisterTool(echoTool(&calls)); err != nil {
				t.Fatal(err)
			}
			_ = a.Send("go")
			waitIdle(t, a)
			r := toolResults(a.Session().Events())
			if calls.Load() != 0 || len(r) != 1 || r[0].Code != agent.CodeInvalidArgs || !strings.Contains(r[0].Content, tc.want) {
				t.Fatalf("calls=%d results=%+v", calls.Load(), r)
			}
			if end, _ := lastTurnEnd(a.Session().Events()); end.Reason != agent.TurnCompleted {
				t.Fatalf("the model could not react: %+v", end)
			}
		})
	}
}

func TestUnknownToolIsAnErrorResult(t *testing.T) {
	p := llm.NewScripted(llm.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "nope"}}}, llm.Reply{Text: "ok"})
	_, a := newAgent(t, p, agent.CreateOptions{})
	_ = a.Send("go")
	waitIdle(t, a)
	r := toolResults(a.Session().Events())
	if len(r) != 1 || !r[0].IsError || !strings.Contains(r[0].Content, "unknown tool") {
		t.Fatalf("%+v", r)
	}
}

func TestMaxSteps(t *testing.T) {
	p := llm.ScriptFunc(func(llm.Request) llm.Reply {
		return llm.Reply{ToolCalls: []llm.ToolCall{{ID: "c", Name: "echo", Arguments: `{"text":"again"}`}}}
	})
	var calls atomic.Int32
	rt, a := newAgent(t, p, agent.CreateOptions{Options: agent.Options{MaxSteps: 3}})
	if _, err := rt.RegisterTool(echoTool(&calls)); err != nil {
		t.Fatal(err)
	}
	_ = a.Send("loop forever")
	waitIdle(t, a)
	end, _ := lastTurnEnd(a.Session().Events())
	if end.Reason != agent.TurnError || !strings.Contains(end.Error, "3 model steps") || p.Calls() != 3 {
		t.Fatalf("end %+v after %d calls", end, p.Calls())
	}
}

func TestMaxTokensEndsTurn(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Text: "trunc", Finish: llm.FinishLength})
	_, a := newAgent(t, p, agent.CreateOptions{Options: agent.Options{MaxTokens: 5}})
	_ = a.Send("write a lot")
	waitIdle(t, a)
	if end, _ := lastTurnEnd(a.Session().Events()); end.Reason != agent.TurnMaxTokens {
		t.Fatalf("end %+v", end)
	}
	if p.Requests()[0].MaxTokens != 5 {
		t.Fatal("max tokens not sent")
	}
}

func TestProviderErrorEndsTurnAsError(t *testing.T) {
	exploded := errors.New("upstream exploded")
	p := llm.NewScripted(llm.Reply{Err: exploded})
	_, a := newAgent(t, p, agent.CreateOptions{})
	_ = a.Send("go")
	waitIdle(t, a)
	end, _ := lastTurnEnd(a.Session().Events())
	if end.Reason != agent.TurnError || !strings.Contains(end.Error, "upstream exploded") {
		t.Fatalf("end %+v", end)
	}
	// The turn end carries the provider's error itself, as a *ModelError.
	if me, ok := errors.AsType[*agent.ModelError](end.Err); !ok || !errors.Is(me, exploded) || end.Error != me.Error() {
		t.Fatalf("end.Err = %#v, want a *agent.ModelError wrapping the provider's error", end.Err)
	}
	// The agent keeps working after a failed turn.
	if a.Status() != agent.StatusIdle {
		t.Fatalf("status %s", a.Status())
	}
}

// TestRequestHookErrorIsNoModelError: a turn ended by a request hook's error carries that error,
// which is not a *ModelError (the model was never called).
func TestRequestHookErrorIsNoModelError(t *testing.T) {
	refused := errors.New("no request today")
	p := llm.NewScripted(llm.Reply{Text: "never"})
	rt, a := newAgent(t, p, agent.CreateOptions{})
	rt.UseRequestHook(func(context.Context, *agent.Agent, llm.Request, agent.RequestNext) (llm.Request, error) {
		return llm.Request{}, refused
	}, false)
	_ = a.Send("go")
	waitIdle(t, a)
	end, _ := lastTurnEnd(a.Session().Events())
	if end.Reason != agent.TurnError || !errors.Is(end.Err, refused) || p.Calls() != 0 {
		t.Fatalf("end %+v after %d calls", end, p.Calls())
	}
	if _, ok := errors.AsType[*agent.ModelError](end.Err); ok {
		t.Fatalf("end.Err = %v is a *agent.ModelError", end.Err)
	}
}

func TestToolPanicContained(t *testing.T) {
	p := llm.NewScripted(llm.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "boom"}}}, llm.Reply{Text: "ok"})
	rt, a := newAgent(t, p, agent.CreateOptions{})
	_, _ = rt.RegisterTool(agent.Tool{Name: "boom", Execute: func(context.Context, agent.ToolCall) agent.ToolResult { panic("kaboom") }})
	_ = a.Send("go")
	waitIdle(t, a)
	r := toolResults(a.Session().Events())
	if len(r) != 1 || r[0].Code != agent.CodeFailed {
		t.Fatalf("%+v", r)
	}
}

func TestContinuationHookStopsTurn(t *testing.T) {
	p := llm.NewScripted(llm.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"text":"x"}`}}})
	var calls atomic.Int32
	rt, a := newAgent(t, p, agent.CreateOptions{})
	_, _ = rt.RegisterTool(echoTool(&calls))
	rt.UseContinuationHook(func(ctx context.Context, a *agent.Agent, s agent.Step, next agent.ContinueNext) bool {
		return false
	}, true)
	_ = a.Send("go")
	waitIdle(t, a)
	if end, _ := lastTurnEnd(a.Session().Events()); end.Reason != agent.TurnCompleted || p.Calls() != 1 || calls.Load() != 1 {
		t.Fatalf("end %+v calls %d", end, p.Calls())
	}
}

func TestParallelToolsRunConcurrentlyResultsInOrder(t *testing.T) {
	const n = 4
	var inside atomic.Int32
	release := make(chan struct{})
	p := llm.NewScripted(
		llm.Reply{ToolCalls: []llm.ToolCall{{ID: "a", Name: "par"}, {ID: "b", Name: "par"}, {ID: "c", Name: "par"}, {ID: "d", Name: "par"}}},
		llm.Reply{Text: "all done"},
	)
	rt, a := newAgent(t, p, agent.CreateOptions{})
	_, _ = rt.RegisterTool(agent.Tool{Name: "par", Parallel: true, Execute: func(ctx context.Context, c agent.ToolCall) agent.ToolResult {
		inside.Add(1)
		<-release
		return agent.ToolResult{Content: c.ID}
	}})
	_ = a.Send("go")
	// All four calls are inside the tool at once: they run concurrently.
	waitFor(t, "4 concurrent tool calls", func() bool { return inside.Load() == n })
	close(release)
	waitIdle(t, a)
	r := toolResults(a.Session().Events())
	got := ""
	for _, e := range r {
		got += e.Content
	}
	if got != "abcd" {
		t.Fatalf("results out of order: %q", got)
	}
}

func TestCancelWhileModelHangsAborts(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Hang: true})
	_, a := newAgent(t, p, agent.CreateOptions{})
	_ = a.Send("hang")
	waitFor(t, "the model call", func() bool { return p.Calls() == 1 })
	a.Cancel("")
	waitIdle(t, a)
	if end, _ := lastTurnEnd(a.Session().Events()); end.Reason != agent.TurnAborted {
		t.Fatalf("end %+v", end)
	}
}

func TestToolRegistrationDuplicateAndRemove(t *testing.T) {
	rt := agent.NewRuntime(llm.NewScripted())
	var calls atomic.Int32
	reg, err := rt.RegisterTool(echoTool(&calls))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RegisterTool(echoTool(&calls)); !errors.Is(err, agent.ErrDuplicateTool) {
		t.Fatalf("duplicate: %v", err)
	}
	reg.Remove()
	reg.Remove()
	if _, err := rt.RegisterTool(echoTool(&calls)); err != nil {
		t.Fatalf("after remove: %v", err)
	}
}

func TestContextValuesReachTools(t *testing.T) {
	type key struct{}
	p := llm.NewScripted(llm.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "who"}}}, llm.Reply{Text: "ok"})
	rt, a := newAgent(t, p, agent.CreateOptions{})
	var seen atomic.Value
	_, _ = rt.RegisterTool(agent.Tool{Name: "who", Execute: func(ctx context.Context, c agent.ToolCall) agent.ToolResult {
		seen.Store(ctx.Value(key{}))
		return agent.ToolResult{Content: "ok"}
	}})
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "U42"))
	cancel() // the caller's cancellation must not reach the turn
	_ = a.SendInput(ctx, agent.Input{Content: "who am i"})
	waitIdle(t, a)
	if seen.Load() != "U42" {
		t.Fatalf("value %v", seen.Load())
	}
	if end, _ := lastTurnEnd(a.Session().Events()); end.Reason != agent.TurnCompleted {
		t.Fatalf("end %+v", end)
	}
}

func TestListenerPanicContained(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Text: "ok"})
	rt, a := newAgent(t, p, agent.CreateOptions{})
	var n atomic.Int32
	rt.Listen(func(*agent.Agent, agent.Event) { panic("bad listener") })
	rt.Listen(func(*agent.Agent, agent.Event) { n.Add(1) })
	_ = a.Send("go")
	waitIdle(t, a)
	if int(n.Load()) != a.Session().Len() {
		t.Fatalf("listener saw %d of %d events", n.Load(), a.Session().Len())
	}
}

func TestCompletedPrefixExcludesOpenTurn(t *testing.T) {
	ev := []agent.Event{
		{Kind: agent.KindTurnStart, Turn: 1}, {Kind: agent.KindTurnEnd, Turn: 1},
		{Kind: agent.KindTurnStart, Turn: 2}, {Kind: agent.KindToolCall, Turn: 2},
	}
	if got := agent.CompletedPrefix(ev); len(got) != 2 {
		t.Fatalf("prefix %d", len(got))
	}
	if got := agent.CompletedPrefix(ev[2:]); got != nil {
		t.Fatalf("no completed turn → nil, got %v", got)
	}
}

func TestResumeTurnHasNoUserMessage(t *testing.T) {
	seed := []agent.Event{
		{Seq: 0, Kind: agent.KindTurnStart, Turn: 1},
		{Seq: 1, Kind: agent.KindUserMessage, Turn: 1, Content: "book a table"},
		{Seq: 2, Kind: agent.KindAssistantMessage, Turn: 1, Step: 1},
		{Seq: 3, Kind: agent.KindToolCall, Turn: 1, Step: 1, CallID: "q1", Tool: "ask_clarification", Arguments: "{}"},
		{Seq: 4, Kind: agent.KindToolResult, Turn: 1, Step: 1, CallID: "q1", Content: "for 4 people"},
		{Seq: 5, Kind: agent.KindTurnEnd, Turn: 1, Reason: agent.TurnCompleted},
	}
	p := llm.NewScripted(llm.Reply{Text: "booked for 4"})
	_, a := newAgent(t, p, agent.CreateOptions{Seed: seed})
	_ = a.SendInput(context.Background(), agent.Input{Resume: true})
	waitIdle(t, a)
	own := a.Session().Since(len(seed))
	if got := kinds(own); got != "turn/start step/start assistant/chunk assistant/chunk assistant/message step/end turn/end" {
		t.Fatalf("resumed turn: %s", got)
	}
	if own[0].Trigger != "resume" {
		t.Fatalf("trigger %q", own[0].Trigger)
	}
	msgs := p.Requests()[0].Messages
	if last := msgs[len(msgs)-1]; last.Role != llm.RoleTool || last.Content != "for 4 people" {
		t.Fatalf("the model must continue from the tool result: %+v", last)
	}
}
