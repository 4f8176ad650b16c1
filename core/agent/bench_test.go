package agent_test

import (
	"context"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
)

// BenchmarkFullTurn measures one whole turn — send, one model step with a tool call, the tool,
// a second step with the answer, idle — against the scripted provider.
func BenchmarkFullTurn(b *testing.B) {
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == llm.RoleTool {
			return llm.Reply{Text: "the answer is 42"}
		}
		return llm.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{"q":"x"}`}}}
	})
	rt := agent.NewRuntime(p)
	_, _ = rt.RegisterTool(agent.Tool{Name: "lookup", Parameters: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`),
		Execute: func(context.Context, agent.ToolCall) agent.ToolResult { return agent.ToolResult{Content: "42"} }})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a, _ := rt.Create(agent.CreateOptions{})
		_ = a.Send("what is the answer?")
		_ = a.WhenIdle(ctx)
		_ = a.Dispose(ctx)
	}
}

// BenchmarkCopySession100 measures a reader's copy of a 100-event session log.
func BenchmarkCopySession100(b *testing.B) {
	seed := make([]agent.Event, 100)
	for i := range seed {
		seed[i] = agent.Event{Seq: i, Kind: agent.KindAssistantMessage, Turn: 1 + i/10, Content: "some text of a message"}
	}
	rt := agent.NewRuntime(llm.NewScripted())
	a, _ := rt.Create(agent.CreateOptions{Seed: seed})
	defer func() { _ = a.Dispose(context.Background()) }()
	b.ReportAllocs()
	for b.Loop() {
		if len(a.Session().Events()) != 100 {
			b.Fatal("short copy")
		}
	}
}

// BenchmarkHistory50Turns measures building the model's messages from a long chat's log (50
// exchanges, every fifth with a tool call), which every step of a lead seeded with it does.
func BenchmarkHistory50Turns(b *testing.B) {
	var events []agent.Event
	for turn := 1; turn <= 50; turn++ {
		events = append(events,
			agent.Event{Kind: agent.KindTurnStart, Turn: turn, Trigger: "user"},
			agent.Event{Kind: agent.KindUserMessage, Turn: turn, Source: "user", Content: "question"},
			agent.Event{Kind: agent.KindStepStart, Turn: turn, Step: 1},
		)
		if turn%5 == 0 {
			events = append(events,
				agent.Event{Kind: agent.KindAssistantMessage, Turn: turn, Step: 1},
				agent.Event{Kind: agent.KindToolCall, Turn: turn, Step: 1, CallID: "c1", Tool: "t", Arguments: "{}"},
				agent.Event{Kind: agent.KindToolResult, Turn: turn, Step: 1, CallID: "c1", Tool: "t", Content: "result"},
				agent.Event{Kind: agent.KindStepEnd, Turn: turn, Step: 1},
				agent.Event{Kind: agent.KindStepStart, Turn: turn, Step: 2},
			)
		}
		events = append(events,
			agent.Event{Kind: agent.KindAssistantMessage, Turn: turn, Step: 1, Content: "answer"},
			agent.Event{Kind: agent.KindStepEnd, Turn: turn, Step: 1},
			agent.Event{Kind: agent.KindTurnEnd, Turn: turn, Reason: agent.TurnCompleted},
		)
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(agent.History(events)) != 120 {
			b.Fatal("wrong history")
		}
	}
}
