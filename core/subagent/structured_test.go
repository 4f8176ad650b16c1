package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
)

func TestStructuredValidCapture(t *testing.T) {
	p := llm.NewScripted(capture("c1", `{ "answer" : "42" }`))
	f := newFixture(t, p)
	run := f.start(t, "spawn", StartRequest{Prompt: "compute", OutputSchema: json.RawMessage(answerSchema)})
	res := settle(t, run)
	if res.StopReason != StopCompleted || string(res.Structured) != `{"answer":"42"}` {
		t.Fatalf("result = %+v (structured %s)", res, res.Structured)
	}
	rs := toolResultsOf(run.Agent().Session().Events())
	if len(rs) != 1 || rs[0].IsError || rs[0].Content != RecordedText {
		t.Fatalf("capture result = %+v", rs)
	}
}

func TestStructuredExactlyOneModelRequestAfterCapture(t *testing.T) {
	// The script holds one reply: any step after the capture would exhaust it and fail the run.
	p := llm.NewScripted(capture("c1", `{"answer":"x"}`))
	f := newFixture(t, p)
	res := settle(t, f.start(t, "spawn", StartRequest{Prompt: "go", OutputSchema: json.RawMessage(answerSchema)}))
	if res.StopReason != StopCompleted || p.Calls() != 1 {
		t.Fatalf("stop %s after %d model requests, want completed after 1", res.StopReason, p.Calls())
	}
}

func TestStructuredPostCaptureCallsDeniedEarlierOnesRun(t *testing.T) {
	p := llm.NewScripted(llm.Reply{ToolCalls: []llm.ToolCall{
		{ID: "c1", Name: "side", Arguments: `{}`},
		{ID: "c2", Name: StructuredOutputTool, Arguments: `{"answer":"a"}`},
		{ID: "c3", Name: "side", Arguments: `{}`},
		{ID: "c4", Name: StructuredOutputTool, Arguments: `{"answer":"b"}`},
	}})
	f := newFixture(t, p)
	var ran atomic.Int32
	reg, err := f.rt.RegisterTool(agent.Tool{Name: "side", Execute: func(context.Context, agent.ToolCall) agent.ToolResult {
		ran.Add(1)
		return agent.ToolResult{Content: "done"}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Remove()
	run := f.start(t, "spawn", StartRequest{Prompt: "go", OutputSchema: json.RawMessage(answerSchema)})
	res := settle(t, run)
	if ran.Load() != 1 {
		t.Fatalf("side effects ran %d times, want 1 (only the call before the capture)", ran.Load())
	}
	if string(res.Structured) != `{"answer":"a"}` {
		t.Fatalf("structured = %s, want the first capture", res.Structured)
	}
	rs := toolResultsOf(run.Agent().Session().Events())
	if len(rs) != 4 || rs[0].IsError || rs[1].Content != RecordedText {
		t.Fatalf("results = %+v", rs)
	}
	for _, r := range rs[2:] {
		if !r.IsError || r.Code != agent.CodeDenied || !strings.Contains(r.Content, "structured output already recorded") {
			t.Fatalf("post-capture call %s not denied: %+v", r.CallID, r)
		}
	}
}

func TestStructuredSchemaSnapshotAtStart(t *testing.T) {
	release := make(chan struct{})
	p := llm.ScriptFunc(func(llm.Request) llm.Reply {
		<-release
		return capture("c1", `{"answer":"x"}`)
	})
	f := newFixture(t, p)
	raw := []byte(answerSchema)
	run := f.start(t, "spawn", StartRequest{Prompt: "go", OutputSchema: raw})
	copy(raw, strings.Repeat(" ", len(raw))) // the caller reuses its buffer after Start
	close(release)
	if res := settle(t, run); res.StopReason != StopCompleted {
		t.Fatalf("stop %s: %s", res.StopReason, res.Detail)
	}
	spec, n := findTool(p.Requests()[0], StructuredOutputTool)
	if n != 1 || string(spec.Parameters) != answerSchema {
		t.Fatalf("the child saw parameters %s, want the schema as it was at start", spec.Parameters)
	}
}

func TestStructuredInvalidCallThenValidRetry(t *testing.T) {
	for _, tc := range []struct {
		name, args, want string
	}{
		{"every violation listed", `{"answer":1,"extra":true}`, "Error: invalid arguments: value.answer must be string; value.extra is not allowed"},
		{"invalid JSON validated as a string", `{"answer":`, "Error: invalid arguments: value must be object"},
		{"empty arguments are an empty object", ``, "Error: invalid arguments: value.answer is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := llm.NewScripted(capture("c1", tc.args), capture("c2", `{"answer":"ok"}`))
			f := newFixture(t, p)
			run := f.start(t, "spawn", StartRequest{Prompt: "go", OutputSchema: json.RawMessage(answerSchema)})
			res := settle(t, run)
			if res.StopReason != StopCompleted || string(res.Structured) != `{"answer":"ok"}` {
				t.Fatalf("result %+v", res)
			}
			rs := toolResultsOf(run.Agent().Session().Events())
			if !rs[0].IsError || rs[0].Code != agent.CodeInvalidArgs || rs[0].Content != tc.want {
				t.Fatalf("invalid call answered %+v, want %q", rs[0], tc.want)
			}
			// The retry happened within the same turn.
			if n := countKind(run.Agent().Session().Events(), agent.KindTurnStart); n != 1 || p.Calls() != 2 {
				t.Fatalf("%d turns, %d requests; want 1 turn, 2 requests", n, p.Calls())
			}
		})
	}
}

func TestStructuredProseFinishNudgedThenCaptured(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Text: "the answer is 4"}, capture("c1", `{"answer":"4"}`))
	f := newFixture(t, p)
	run := f.start(t, "spawn", StartRequest{Prompt: "2+2", OutputSchema: json.RawMessage(answerSchema)})
	res := settle(t, run)
	if res.StopReason != StopCompleted || string(res.Structured) != `{"answer":"4"}` {
		t.Fatalf("result %+v", res)
	}
	reqs := p.Requests()
	if len(reqs) != 2 || lastUser(reqs[1]) != NudgeText {
		t.Fatalf("second request's prompt = %q, want the nudge", lastUser(reqs[1]))
	}
	var triggers []string
	for _, e := range run.Agent().Session().Events() {
		if e.Kind == agent.KindTurnStart {
			triggers = append(triggers, e.Trigger)
		}
	}
	if strings.Join(triggers, ",") != "user,nudge" {
		t.Fatalf("turn triggers %v, want the nudge as a fresh turn", triggers)
	}
}

func TestStructuredNudgesExhaustedIsError(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Text: "prose"}, llm.Reply{Text: "more prose"})
	f := newFixture(t, p) // default: one nudge
	res := settle(t, f.start(t, "spawn", StartRequest{Prompt: "go", OutputSchema: json.RawMessage(answerSchema)}))
	if res.StopReason != StopError || res.Structured != nil || p.Calls() != 2 {
		t.Fatalf("result %+v after %d requests; want error after 2", res, p.Calls())
	}
	if !strings.Contains(res.Detail, StructuredOutputTool) || res.Output != "more prose" {
		t.Fatalf("detail %q output %q", res.Detail, res.Output)
	}
}

func TestStructuredZeroRetriesErrorAfterOneRequest(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Text: "prose"}, capture("c1", `{"answer":"late"}`))
	f := newFixture(t, p, 0)
	res := settle(t, f.start(t, "fork", StartRequest{Prompt: "go", OutputSchema: json.RawMessage(answerSchema)}))
	if res.StopReason != StopError || p.Calls() != 1 {
		t.Fatalf("stop %s after %d requests; want error after 1", res.StopReason, p.Calls())
	}
}

func TestStructuredErroredChildNotNudged(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Err: errors.New("upstream 500")}, capture("c1", `{"answer":"x"}`))
	f := newFixture(t, p, 3)
	res := settle(t, f.start(t, "spawn", StartRequest{Prompt: "go", OutputSchema: json.RawMessage(answerSchema)}))
	if res.StopReason != StopError || p.Calls() != 1 || !strings.Contains(res.Detail, "upstream 500") {
		t.Fatalf("result %+v after %d requests; want error, not nudged", res, p.Calls())
	}
}

func TestStructuredCancelDuringTurnEndIsAborted(t *testing.T) {
	release := make(chan struct{})
	p := llm.ScriptFunc(func(llm.Request) llm.Reply {
		<-release
		return llm.Reply{Text: "prose, no capture"}
	})
	f := newFixture(t, p, 3)
	var run atomic.Pointer[Run]
	f.rt.Listen(func(a *agent.Agent, e agent.Event) {
		if r := run.Load(); r != nil && a == r.Agent() && e.Kind == agent.KindTurnEnd {
			r.Cancel("user stopped it") // lands as the clean turn ends, before any nudge
		}
	})
	r := f.start(t, "spawn", StartRequest{Prompt: "go", OutputSchema: json.RawMessage(answerSchema)})
	run.Store(r)
	close(release)
	res := settle(t, r)
	if res.StopReason != StopAborted || p.Calls() != 1 || res.Detail != "cancelled: user stopped it" {
		t.Fatalf("result %+v after %d requests; want aborted, no nudge", res, p.Calls())
	}
}

func TestStructuredUnsupportedSchemaRejectedBeforeChildExists(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		want         []string
	}{
		{"unsupported keywords", `{"type":"object","properties":{"a":{"type":"string","pattern":"x"}},"oneOf":[]}`,
			[]string{"schema.oneOf is not supported", "schema.properties.a.pattern is not supported"}},
		{"root not an object", `{"type":"array","items":{"type":"string"}}`, []string{`schema.type must be "object" at the root`}},
		{"not JSON", `{"type":`, []string{"schema is not valid JSON"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := llm.NewScripted()
			f := newFixture(t, p)
			_, err := f.svc.Start(context.Background(), "spawn", StartRequest{Prompt: "go", OutputSchema: json.RawMessage(tc.schema)})
			var se *OutputSchemaError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *OutputSchemaError", err)
			}
			if len(se.Violations) != len(tc.want) {
				t.Fatalf("violations %v, want %v", se.Violations, tc.want)
			}
			for i, v := range se.Violations {
				if v.String() != tc.want[i] {
					t.Errorf("violation %d = %q, want %q", i, v, tc.want[i])
				}
			}
			if n := len(f.rt.List()); n != 0 || p.Calls() != 0 || structuredRefs(f.rt) != 2 {
				t.Fatalf("%d agents, %d requests, %d refs: a child existed or a run held the runtime", n, p.Calls(), structuredRefs(f.rt))
			}
		})
	}
}

func TestStructuredInstructionLastForChildAbsentForParent(t *testing.T) {
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		if _, n := findTool(req, StructuredOutputTool); n > 0 {
			return capture("c1", `{"answer":"x"}`)
		}
		return llm.Reply{Text: "parent answer"}
	})
	f := newFixture(t, p)
	parent := f.parent(t, agent.CreateOptions{Options: agent.Options{System: []string{"you are the lead"}}})
	res := settle(t, f.start(t, "spawn", StartRequest{Prompt: "go", Parent: parent, OutputSchema: json.RawMessage(answerSchema),
		AgentOptions: AgentOptions{System: []string{"you are a worker"}}}))
	if res.StopReason != StopCompleted {
		t.Fatalf("child: %+v", res)
	}
	if err := parent.Send("hello"); err != nil {
		t.Fatal(err)
	}
	idle(t, parent)
	reqs := p.Requests()
	child, lead := reqs[0], reqs[1]
	if got := strings.Join(child.System, "|"); got != "you are a worker|"+StructuredInstruction {
		t.Fatalf("child system = %q, want its own prompt then the instruction last", got)
	}
	if got := strings.Join(lead.System, "|"); got != "you are the lead" {
		t.Fatalf("parent system = %q, want no instruction", got)
	}
	if _, n := findTool(lead, StructuredOutputTool); n != 0 || lead.Tools != nil {
		t.Fatalf("parent request carries tools %v, want none at all", lead.Tools)
	}
}

func TestStructuredTwoConcurrentChildrenIsolated(t *testing.T) {
	var arrived sync.WaitGroup
	arrived.Add(2)
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		arrived.Done()
		arrived.Wait() // both children are mid-turn at once
		spec, _ := findTool(req, StructuredOutputTool)
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(spec.Parameters, &s)
		for name := range s.Properties {
			return capture("c1", `{"`+name+`":"`+lastUser(req)+`"}`)
		}
		return llm.Reply{Text: "no schema"}
	})
	f := newFixture(t, p)
	a := f.start(t, "spawn", StartRequest{Prompt: "A", OutputSchema: json.RawMessage(`{"type":"object","properties":{"alpha":{"type":"string"}},"required":["alpha"]}`)})
	b := f.start(t, "fork", StartRequest{Prompt: "B", OutputSchema: json.RawMessage(`{"type":"object","properties":{"beta":{"type":"string"}},"required":["beta"]}`)})
	ra, rb := settle(t, a), settle(t, b)
	if string(ra.Structured) != `{"alpha":"A"}` || string(rb.Structured) != `{"beta":"B"}` {
		t.Fatalf("A got %s (%s), B got %s (%s)", ra.Structured, ra.Detail, rb.Structured, rb.Detail)
	}
	for _, req := range p.Requests() {
		if _, n := findTool(req, StructuredOutputTool); n != 1 {
			t.Fatalf("a request carried %d structured_output tools", n)
		}
	}
}

func TestStructuredReplacingDownstreamHookKeepsSchema(t *testing.T) {
	p := llm.NewScripted(capture("c1", `{"answer":"x"}`))
	f := newFixture(t, p)
	reg := f.rt.UseRequestHook(func(ctx context.Context, a *agent.Agent, req llm.Request, next agent.RequestNext) (llm.Request, error) {
		out, err := next(ctx, req)
		return llm.Request{Model: "replaced", Messages: out.Messages}, err // drops tools and system
	}, false)
	defer reg.Remove()
	res := settle(t, f.start(t, "spawn", StartRequest{Prompt: "go", OutputSchema: json.RawMessage(answerSchema)}))
	req := p.Requests()[0]
	spec, n := findTool(req, StructuredOutputTool)
	if res.StopReason != StopCompleted || n != 1 || string(spec.Parameters) != answerSchema || req.Model != "replaced" {
		t.Fatalf("result %s, request %+v", res.StopReason, req)
	}
	if req.System[len(req.System)-1] != StructuredInstruction {
		t.Fatalf("instruction lost: %q", req.System)
	}
}

func TestStructuredRefcountAcrossSpawnForkAndRuns(t *testing.T) {
	release := make(chan struct{})
	p := llm.ScriptFunc(func(llm.Request) llm.Reply {
		<-release
		return capture("c1", `{"answer":"x"}`)
	})
	rt := agent.NewRuntime(p)
	registered := func() bool {
		reg, err := rt.RegisterTool(agent.Tool{Name: StructuredOutputTool, Execute: captureStructured})
		if err == nil {
			reg.Remove()
			return false
		}
		return errors.Is(err, agent.ErrDuplicateTool)
	}
	spawn, err := NewSpawn(rt, Config{})
	if err != nil {
		t.Fatal(err)
	}
	fork, err := NewFork(rt, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if structuredRefs(rt) != 2 || !registered() {
		t.Fatalf("refs %d after two backends", structuredRefs(rt))
	}
	run, err := spawn.Start(context.Background(), StartRequest{Prompt: "go", OutputSchema: json.RawMessage(answerSchema)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = run.Dispose(context.Background()) }()
	if structuredRefs(rt) != 3 {
		t.Fatalf("refs %d with a live structured run, want 3", structuredRefs(rt))
	}
	spawn.Close()
	fork.Close()
	fork.Close() // idempotent
	if structuredRefs(rt) != 1 || !registered() {
		t.Fatalf("refs %d: the live run must keep the runtime registered", structuredRefs(rt))
	}
	close(release)
	if res := settle(t, run); res.StopReason != StopCompleted {
		t.Fatalf("run: %+v", res)
	}
	if structuredRefs(rt) != 0 || registered() {
		t.Fatalf("refs %d after the last holder released", structuredRefs(rt))
	}
}

func TestStructuredDoubleRelease(t *testing.T) {
	rt := agent.NewRuntime(llm.NewScripted())
	a, err := AcquireStructuredRuntime(rt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := AcquireStructuredRuntime(rt)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	a.Release()
	if structuredRefs(rt) != 1 {
		t.Fatalf("refs %d after a double release of one of two, want 1", structuredRefs(rt))
	}
	b.Release()
	b.Release()
	if structuredRefs(rt) != 0 {
		t.Fatalf("refs %d, want 0 (never below)", structuredRefs(rt))
	}
	var none *StructuredAcquisition
	none.Release() // a nil acquisition is a no-op
}

func TestStructuredToolWithoutSchemaIsError(t *testing.T) {
	p := llm.NewScripted(capture("c1", `{"answer":"x"}`), llm.Reply{Text: "ok"})
	f := newFixture(t, p)
	a := f.parent(t, agent.CreateOptions{})
	_ = a.Send("go")
	idle(t, a)
	rs := toolResultsOf(a.Session().Events())
	if len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Content, StructuredOutputTool) {
		t.Fatalf("results %+v, want an isError result", rs)
	}
}

func TestStructuredAcquisitionReleasedWhenCreateFails(t *testing.T) {
	rt := agent.NewRuntime(llm.NewScripted())
	badSeed := []agent.Event{{Seq: 5, Kind: agent.KindTurnEnd}}
	_, err := StartInProcessRun(context.Background(), rt, StartRequest{Prompt: "go", OutputSchema: json.RawMessage(answerSchema)},
		InProcessRunOptions{ProviderName: "fork", Seed: badSeed, StructuredNudgeRetries: 1})
	var se *agent.SeedError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a seed error", err)
	}
	if structuredRefs(rt) != 0 {
		t.Fatalf("refs %d after a failed create: the acquisition leaked", structuredRefs(rt))
	}
}
