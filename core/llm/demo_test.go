package llm

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/core/agent/schema"
)

var (
	clarifyTool    = ToolSpec{Name: DemoToolClarify, Parameters: json.RawMessage(`{"type":"object"}`)}
	delegateTool   = ToolSpec{Name: DemoToolDelegate, Parameters: json.RawMessage(`{"type":"object"}`)}
	structuredTool = ToolSpec{Name: DemoToolStructured, Parameters: json.RawMessage(`{
		"type":"object",
		"properties":{
			"title":{"type":"string"},
			"score":{"type":"number"},
			"count":{"type":"integer"},
			"done":{"type":"boolean"},
			"tags":{"type":"array","items":{"type":"string"}},
			"level":{"enum":["low","high"]},
			"kind":{"const":"report"},
			"maybe":{"type":["null","string"]},
			"meta":{"type":"object","properties":{"by":{"type":"string"},"note":{"type":"string"}},"required":["by"]},
			"optional":{"type":"string"}
		},
		"required":["title","score","count","done","tags","level","kind","maybe","meta"],
		"additionalProperties":false}`)}
)

func user(text string) Message { return Message{Role: RoleUser, Content: text} }

func TestDemoAnswersEachBehaviour(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		// wantCalls is the expected tool calls; nil means a text answer.
		wantCalls []ToolCall
		// wantText are substrings of the text answer.
		wantText []string
	}{
		{
			name:      "vague request asks for clarification",
			req:       Request{Messages: []Message{user("help me")}, Tools: []ToolSpec{clarifyTool, delegateTool}},
			wantCalls: []ToolCall{{ID: "demo_1_1", Name: DemoToolClarify, Arguments: `{"allow_free_text":true,"fields":[{"id":"topic","kind":"choice","label":"What should I help with?","options":["Summarize something","Plan a task","Answer a question"],"required":true}],"question":"Your request is short — what should I help with? ` + DemoBanner + `"}`}},
		},
		{
			name:      "long but empty plea asks for clarification",
			req:       Request{Messages: []Message{user("Can you help me?")}, Tools: []ToolSpec{clarifyTool}},
			wantCalls: []ToolCall{{ID: "demo_1_1", Name: DemoToolClarify}},
		},
		{
			name:     "vague request without the tool gets a reply",
			req:      Request{Messages: []Message{user("hi")}},
			wantText: []string{DemoBanner, "of 1 word:", "> hi"},
		},
		{
			name: "multi-part request delegates one call per part",
			req:  Request{Messages: []Message{user("1. Summarize the report 2. Plan the launch; check the budget and also email Bob")}, Tools: []ToolSpec{clarifyTool, delegateTool}},
			wantCalls: []ToolCall{
				{ID: "demo_1_1", Name: DemoToolDelegate, Arguments: `{"mode":"spawn","task":"Summarize the report"}`},
				{ID: "demo_1_2", Name: DemoToolDelegate, Arguments: `{"mode":"spawn","task":"Plan the launch"}`},
				{ID: "demo_1_3", Name: DemoToolDelegate, Arguments: `{"mode":"spawn","task":"check the budget"}`},
				{ID: "demo_1_4", Name: DemoToolDelegate, Arguments: `{"mode":"spawn","task":"email Bob"}`},
			},
		},
		{
			name: "more than four parts fold into the fourth call",
			req:  Request{Messages: []Message{user("write a\nwrite b\nwrite c\nwrite d\nwrite e")}, Tools: []ToolSpec{delegateTool}},
			wantCalls: []ToolCall{
				{ID: "demo_1_1", Name: DemoToolDelegate, Arguments: `{"mode":"spawn","task":"write a"}`},
				{ID: "demo_1_2", Name: DemoToolDelegate, Arguments: `{"mode":"spawn","task":"write b"}`},
				{ID: "demo_1_3", Name: DemoToolDelegate, Arguments: `{"mode":"spawn","task":"write c"}`},
				{ID: "demo_1_4", Name: DemoToolDelegate, Arguments: `{"mode":"spawn","task":"write d; write e"}`},
			},
		},
		{
			name:     "multi-part request without delegate is echoed part by part",
			req:      Request{Messages: []Message{user("- buy milk today\n- call the bank tomorrow")}},
			wantText: []string{DemoBanner, "in 2 parts", "1. buy milk today", "2. call the bank tomorrow"},
		},
		{
			name: "tool results in the current turn are summarized",
			req: Request{Tools: []ToolSpec{delegateTool}, Messages: []Message{
				user("do a; do b please"),
				{Role: RoleAssistant, ToolCalls: []ToolCall{
					{ID: "c1", Name: DemoToolDelegate, Arguments: `{"task":"do a"}`},
					{ID: "c2", Name: DemoToolDelegate, Arguments: `{"task":"do b please","name":"b-team"}`},
					{ID: "c3", Name: "lookup"},
				}},
				{Role: RoleTool, ToolCallID: "c1", Content: DemoBanner + "\n\nA is done:\nall good"},
				{Role: RoleTool, ToolCallID: "c2", Content: ""},
				{Role: RoleTool, ToolCallID: "c3", Content: "42"},
			}},
			wantText: []string{DemoBanner, "(3 results)", "1. **do a** — A is done: all good", "2. **b-team** — _(no output)_", "3. **Result** — 42"},
		},
		{
			name: "an answered question is the user's answer",
			req: Request{Tools: []ToolSpec{clarifyTool, delegateTool}, Messages: []Message{
				user("help me"),
				{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "q1", Name: DemoToolClarify, Arguments: `{"question":"What?"}`}}},
				{Role: RoleTool, ToolCallID: "q1", Content: "The user answered:\nWhat should I help with?: Plan a task"},
			}},
			wantText: []string{DemoBanner, "You answered: What should I help with?: Plan a task"},
		},
		{
			name: "tool results of an earlier turn do not count",
			req: Request{Tools: []ToolSpec{delegateTool}, Messages: []Message{
				user("do a; do b please"),
				{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: DemoToolDelegate}}},
				{Role: RoleTool, ToolCallID: "c1", Content: "done"},
				{Role: RoleAssistant, Content: "ok"},
				user("first x; then y"),
			}},
			wantCalls: []ToolCall{
				{ID: "demo_5_1", Name: DemoToolDelegate, Arguments: `{"mode":"spawn","task":"first x"}`},
				{ID: "demo_5_2", Name: DemoToolDelegate, Arguments: `{"mode":"spawn","task":"then y"}`},
			},
		},
		{
			name:      "structured output is called with arguments fitting its schema",
			req:       Request{Messages: []Message{user("rate the document please")}, Tools: []ToolSpec{structuredTool, delegateTool}},
			wantCalls: []ToolCall{{ID: "demo_1_1", Name: DemoToolStructured, Arguments: `{"count":0,"done":false,"kind":"report","level":"low","maybe":"demo maybe","meta":{"by":"demo by"},"score":0,"tags":[],"title":"demo title"}`}},
		},
		{
			name:     "plain question gets an echo",
			req:      Request{System: []string{"be nice"}, Messages: []Message{user("What is the capital of France?")}},
			wantText: []string{DemoBanner, "a question of 6 words", "> What is the capital of France?", "DEEPSEEK_API_KEY"},
		},
		{
			name:     "no user message at all",
			req:      Request{},
			wantText: []string{DemoBanner, "did not get a message"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var deltas []string
			resp, err := NewDemo().Stream(context.Background(), tt.req, func(d Delta) { deltas = append(deltas, d.Content) })
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantCalls == nil {
				if len(resp.ToolCalls) != 0 || resp.Finish != FinishStop {
					t.Fatalf("want a text answer, got %+v", resp)
				}
				if !strings.HasPrefix(resp.Content, DemoBanner) {
					t.Errorf("answer does not announce the demo: %q", resp.Content)
				}
				for _, w := range tt.wantText {
					if !strings.Contains(resp.Content, w) {
						t.Errorf("answer lacks %q:\n%s", w, resp.Content)
					}
				}
				if len(deltas) < 2 || strings.Join(deltas, "") != resp.Content {
					t.Errorf("streamed %d deltas that rejoin to %q", len(deltas), strings.Join(deltas, ""))
				}
				return
			}
			if resp.Finish != FinishToolCalls || len(resp.ToolCalls) != len(tt.wantCalls) {
				t.Fatalf("calls = %+v, want %+v", resp.ToolCalls, tt.wantCalls)
			}
			ids := map[string]bool{}
			for i, want := range tt.wantCalls {
				got := resp.ToolCalls[i]
				if got.ID != want.ID || got.Name != want.Name || (want.Arguments != "" && got.Arguments != want.Arguments) {
					t.Errorf("call %d = %+v\nwant     %+v", i, got, want)
				}
				if !json.Valid([]byte(got.Arguments)) || ids[got.ID] {
					t.Errorf("call %d has invalid arguments or a repeated id: %+v", i, got)
				}
				ids[got.ID] = true
			}
		})
	}
}

func TestDemoIsDeterministic(t *testing.T) {
	req := Request{Messages: []Message{user("plan a trip; book a hotel")}, Tools: []ToolSpec{delegateTool}}
	a, _ := NewDemo().Stream(context.Background(), req, nil)
	b, _ := NewDemo().Stream(context.Background(), req, nil)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two answers differ:\n%+v\n%+v", a, b)
	}
	if NewDemo().Name() != "demo" {
		t.Fatal("name is not demo")
	}
}

func TestDemoHonoursACancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewDemo().Stream(ctx, Request{Messages: []Message{user("hello there friend")}}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestDemoStructuredArgumentsPassTheRuntimeValidator(t *testing.T) {
	resp, err := NewDemo().Stream(context.Background(), Request{Messages: []Message{user("rate it")}, Tools: []ToolSpec{structuredTool}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schema.Parse(structuredTool.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	if vs := schema.ValidateJSON(sch, []byte(resp.ToolCalls[0].Arguments)); len(vs) > 0 {
		t.Fatalf("arguments %s do not fit the schema: %s", resp.ToolCalls[0].Arguments, schema.Join(vs))
	}
}

func TestDemoFillToleratesOddSchemas(t *testing.T) {
	tests := []struct{ name, schema, want string }{
		{"empty", ``, `{}`},
		{"not JSON", `{"type":`, `{}`},
		{"not an object schema", `{"type":"string"}`, `{}`},
		{"required without properties", `{"type":"object","required":["a",5]}`, `{"a":"demo a"}`},
		{"properties without type", `{"properties":{"x":{"type":"integer"}},"required":["x"]}`, `{"x":0}`},
		{"no required", `{"type":"object","properties":{"x":{"type":"string"}}}`, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := demoFill(json.RawMessage(tt.schema)); got != tt.want {
				t.Fatalf("demoFill = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDemoSplitFindsTheParts(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"one thing only", []string{"one thing only"}},
		{"a; b", []string{"a", "b"}},
		{"x and also y", []string{"x", "y"}},
		{"1) first\n2) second", []string{"first", "second"}},
		{"* star\n• dot", []string{"star", "dot"}},
		{"version 3.5 is out", []string{"version 3.5 is out"}},
		{"well-known fact", []string{"well-known fact"}},
		{"\n\n ;; \n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := demoSplit(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("demoSplit(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzDemoSplit(f *testing.F) {
	for _, s := range []string{"a; b", "1. x 2. y", "- a\n- b", "x and also y", "", "☃; ☃"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range demoSplit(s) {
			if p == "" || p != strings.TrimSpace(p) || (utf8.ValidString(s) && !utf8.ValidString(p)) {
				t.Fatalf("demoSplit(%q) gave part %q", s, p)
			}
		}
		resp, err := NewDemo().Stream(context.Background(), Request{Messages: []Message{user(s)}, Tools: []ToolSpec{delegateTool, clarifyTool}}, nil)
		if err != nil || len(resp.ToolCalls) > demoMaxDelegates {
			t.Fatalf("answer %+v, %v", resp, err)
		}
		for _, c := range resp.ToolCalls {
			if !json.Valid([]byte(c.Arguments)) {
				t.Fatalf("invalid arguments %q", c.Arguments)
			}
		}
	})
}

// TestDemoAnswersNeverNameTools proves no text answer of the demo — in any of its scripted flows,
// the results of every tool it uses included — shows a tool's name: users read answers, and
// tool names are internals.
func TestDemoAnswersNeverNameTools(t *testing.T) {
	tools := []ToolSpec{clarifyTool, delegateTool}
	flows := map[string][]Message{
		"echo":     {user("What is the capital of France?")},
		"question": {user("help me"), {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "q", Name: DemoToolClarify, Arguments: `{}`}}}, {Role: RoleTool, ToolCallID: "q", Content: "The user answered:\ntopic: Plan a task"}},
		"delegations": {user("a; b"), {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "d1", Name: DemoToolDelegate, Arguments: `{"task":"a"}`}, {ID: "d2", Name: DemoToolDelegate, Arguments: `{}`}}},
			{Role: RoleTool, ToolCallID: "d1", Content: "done"}, {Role: RoleTool, ToolCallID: "d2", Content: "Error: subagent did not complete"}},
		"structured child": {user("rate it"), {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "s", Name: DemoToolStructured, Arguments: `{}`}}}, {Role: RoleTool, ToolCallID: "s", Content: "ok"}},
		"unknown call id":  {user("x; y"), {Role: RoleTool, ToolCallID: "nobody", Content: "orphan"}},
	}
	for name, msgs := range flows {
		t.Run(name, func(t *testing.T) {
			resp, err := NewDemo().Stream(context.Background(), Request{Messages: msgs, Tools: tools}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Content == "" {
				t.Fatalf("no text answer: %+v", resp)
			}
			for _, tool := range []string{DemoToolClarify, DemoToolDelegate, DemoToolStructured} {
				if strings.Contains(resp.Content, tool) {
					t.Errorf("the answer names the tool %s:\n%s", tool, resp.Content)
				}
			}
		})
	}
}
