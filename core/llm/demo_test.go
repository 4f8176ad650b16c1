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

var (
	echoTool = ToolSpec{Name: "everything__echo", Parameters: json.RawMessage(`{
		"type":"object","properties":{"message":{"type":"string","description":"Message to echo"}},"required":["message"]}`)}
	sumTool = ToolSpec{Name: "everything__get-sum", Parameters: json.RawMessage(`{
		"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)}
	issueTool = ToolSpec{Name: "tickets__create_issue", Parameters: json.RawMessage(`{
		"type":"object",
		"properties":{
			"body":{"type":"string"},
			"labels":{"type":"array","items":{"type":"string"}},
			"priority":{"type":"integer"},
			"title":{"type":"string"},
			"urgent":{"type":"boolean"}
		},
		"required":["labels","title","urgent"]}`)}
	serverTools = []ToolSpec{clarifyTool, delegateTool, echoTool, sumTool, issueTool}
)

// serverTool is a tool named srv__tool with the given schema.
func serverTool(schema string) ToolSpec {
	return ToolSpec{Name: "srv__tool", Parameters: json.RawMessage(schema)}
}

func TestDemoUsesServerTools(t *testing.T) {
	echoed := []Message{
		user("use everything__echo hello"),
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_demo_tool_1", Name: "everything__echo", Arguments: `{"message":"hello"}`}}},
	}
	tests := []struct {
		name  string
		req   Request
		wantC *ToolCall // the one tool call expected; nil means a text answer
		// wantText and notText are substrings the text answer must and must not hold.
		wantText, notText []string
	}{
		{
			name:  "echo gets the text after its name",
			req:   Request{Messages: []Message{user("use everything__echo hello")}, Tools: serverTools},
			wantC: &ToolCall{ID: "call_demo_tool_1", Name: "everything__echo", Arguments: `{"message":"hello"}`},
		},
		{
			name:  "capitalised Use and the word tool after the name",
			req:   Request{Messages: []Message{user("Use tickets__create_issue tool Printer broken")}, Tools: serverTools},
			wantC: &ToolCall{ID: "call_demo_tool_1", Name: "tickets__create_issue", Arguments: `{"labels":[],"title":"Printer broken","urgent":false}`},
		},
		{
			name:  "required numbers come from the text in order",
			req:   Request{Messages: []Message{user("please USE everything__get-sum 2 3")}, Tools: serverTools},
			wantC: &ToolCall{ID: "call_demo_tool_1", Name: "everything__get-sum", Arguments: `{"a":2,"b":3}`},
		},
		{
			name:  "missing numbers are zero",
			req:   Request{Messages: []Message{user("use everything__get-sum 7.5")}, Tools: serverTools},
			wantC: &ToolCall{ID: "call_demo_tool_1", Name: "everything__get-sum", Arguments: `{"a":7.5,"b":0}`},
		},
		{
			name: "integers are truncated and the string still gets the whole text",
			req: Request{Messages: []Message{user("use srv__tool -2.7 and 4 please")}, Tools: []ToolSpec{serverTool(
				`{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":["null","number"]},"note":{"type":"string"},"z":{"type":"number"}},"required":["x","y"]}`)}},
			wantC: &ToolCall{ID: "call_demo_tool_1", Name: "srv__tool", Arguments: `{"note":"-2.7 and 4 please","x":-2,"y":4}`},
		},
		{
			name: "an optional string property takes the text when no required one can, enum and const kept",
			req: Request{Messages: []Message{user("use srv__tool: 5 hi")}, Tools: []ToolSpec{serverTool(
				`{"type":"object","properties":{"a":{"type":"string","enum":["x"]},"k":{"const":"c"},"n":{"type":"integer","enum":[9]},"z":{"type":"string"}},"required":["a","k","n"]}`)}},
			wantC: &ToolCall{ID: "call_demo_tool_1", Name: "srv__tool", Arguments: `{"a":"x","k":"c","n":9,"z":"5 hi"}`},
		},
		{
			name:  "no text after the name fills the schema",
			req:   Request{Messages: []Message{user("use everything__echo")}, Tools: serverTools},
			wantC: &ToolCall{ID: "call_demo_tool_1", Name: "everything__echo", Arguments: `{"message":"demo message"}`},
		},
		{
			name:  "an offered name is found after one that is not",
			req:   Request{Messages: []Message{user("use nosuch__tool or use everything__echo hi")}, Tools: serverTools},
			wantC: &ToolCall{ID: "call_demo_tool_1", Name: "everything__echo", Arguments: `{"message":"hi"}`},
		},
		{
			name:  "the rule comes before structured_output",
			req:   Request{Messages: []Message{user("use everything__echo hi")}, Tools: []ToolSpec{structuredTool, echoTool}},
			wantC: &ToolCall{ID: "call_demo_tool_1", Name: "everything__echo", Arguments: `{"message":"hi"}`},
		},
		{
			name:  "a malformed schema gives empty arguments",
			req:   Request{Messages: []Message{user("use srv__tool hi")}, Tools: []ToolSpec{serverTool(`{"type":"object","properties":[1],"required":["a"]}`)}},
			wantC: &ToolCall{ID: "call_demo_tool_1", Name: "srv__tool", Arguments: `{}`},
		},
		{
			name:  "a later turn gets a fresh call id",
			req:   Request{Messages: append(echoed, Message{Role: RoleTool, ToolCallID: "call_demo_tool_1", Content: "echo: hello"}, Message{Role: RoleAssistant, Content: "ok"}, user("use everything__echo again")), Tools: serverTools},
			wantC: &ToolCall{ID: "call_demo_tool_5", Name: "everything__echo", Arguments: `{"message":"again"}`},
		},
		{
			name:     "a tool not offered is answered with the offered server tools",
			req:      Request{Messages: []Message{user("use nosuch__tool now")}, Tools: serverTools},
			wantText: []string{DemoBanner, "No tool named `nosuch__tool` is available", "`everything__echo`, `everything__get-sum`, `tickets__create_issue`"},
			notText:  []string{"`" + DemoToolDelegate + "`", "`" + DemoToolClarify + "`"},
		},
		{
			name:     "the name must match exactly",
			req:      Request{Messages: []Message{user("use Everything__Echo hi")}, Tools: serverTools},
			wantText: []string{DemoBanner, "No tool named `Everything__Echo`", "`everything__echo`"},
		},
		{
			name:     "no server tools offered at all",
			req:      Request{Messages: []Message{user("use nosuch__tool")}, Tools: []ToolSpec{delegateTool}},
			wantText: []string{DemoBanner, "No tool named `nosuch__tool`", "No server tools are offered"},
		},
		{
			name:     "a name without the separator is not taken",
			req:      Request{Messages: []Message{user("use delegate for this thing please")}, Tools: serverTools},
			wantText: []string{DemoBanner, "> use delegate for this thing please"},
			notText:  []string{"No tool named"},
		},
		{
			name:     "use inside another word is not taken",
			req:      Request{Messages: []Message{user("we reuse everything__echo often")}, Tools: serverTools},
			wantText: []string{DemoBanner, "> we reuse everything__echo often"},
			notText:  []string{"No tool named"},
		},
		{
			name:     "a dunder word is not a tool name",
			req:      Request{Messages: []Message{user("how do I use __init__ in Python?")}, Tools: serverTools},
			wantText: []string{DemoBanner, "a question of"},
			notText:  []string{"No tool named"},
		},
		{
			name:     "the result of a server tool is summarized under its name",
			req:      Request{Messages: append(echoed, Message{Role: RoleTool, ToolCallID: "call_demo_tool_1", Content: "echo: hello"}), Tools: serverTools},
			wantText: []string{DemoBanner, "(1 result)", "1. **everything__echo** — echo: hello"},
		},
		{
			name: "an error of a server tool is summarized with its text",
			req: Request{Tools: serverTools, Messages: []Message{
				user("use tickets__create_issue Printer broken"),
				{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_demo_tool_1", Name: "tickets__create_issue", Arguments: `{}`}}},
				{Role: RoleTool, ToolCallID: "call_demo_tool_1", Content: "Error: server tickets is not connected"},
			}},
			wantText: []string{DemoBanner, "1. **tickets__create_issue** — Error: server tickets is not connected"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var deltas []string
			resp, err := NewDemo().Stream(context.Background(), tt.req, func(d Delta) { deltas = append(deltas, d.Content) })
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantC != nil {
				if resp.Finish != FinishToolCalls || len(resp.ToolCalls) != 1 || resp.Content != "" {
					t.Fatalf("want one call %+v, got %+v", *tt.wantC, resp)
				}
				if got := resp.ToolCalls[0]; got != *tt.wantC {
					t.Fatalf("call = %+v\nwant   %+v", got, *tt.wantC)
				}
				var obj map[string]any
				if err := json.Unmarshal([]byte(resp.ToolCalls[0].Arguments), &obj); err != nil || obj == nil {
					t.Fatalf("arguments are not a JSON object: %q (%v)", resp.ToolCalls[0].Arguments, err)
				}
				return
			}
			if resp.Finish != FinishStop || len(resp.ToolCalls) != 0 || !strings.HasPrefix(resp.Content, DemoBanner) {
				t.Fatalf("want a text answer with the banner, got %+v", resp)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(resp.Content, w) {
					t.Errorf("answer lacks %q:\n%s", w, resp.Content)
				}
			}
			for _, w := range tt.notText {
				if strings.Contains(resp.Content, w) {
					t.Errorf("answer holds %q:\n%s", w, resp.Content)
				}
			}
			if strings.Join(deltas, "") != resp.Content {
				t.Errorf("deltas rejoin to %q", strings.Join(deltas, ""))
			}
		})
	}
}

func TestDemoServerToolAnswersAreDeterministic(t *testing.T) {
	for _, msgs := range [][]Message{
		{user("use tickets__create_issue tool Printer broken on floor 2")},
		{user("use nosuch__tool")},
		{user("use everything__echo x"), {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Name: "everything__echo"}}}, {Role: RoleTool, ToolCallID: "c", Content: "echo: x"}},
	} {
		req := Request{Messages: msgs, Tools: serverTools}
		a, errA := NewDemo().Stream(context.Background(), req, nil)
		b, errB := NewDemo().Stream(context.Background(), req, nil)
		if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("two answers to %q differ:\n%+v (%v)\n%+v (%v)", msgs[0].Content, a, errA, b, errB)
		}
	}
}

func TestDemoToolArgsToleratesOddSchemas(t *testing.T) {
	tests := []struct{ name, schema, text, want string }{
		{"missing", ``, "hi", `{}`},
		{"not JSON", `{"type":`, "hi", `{}`},
		{"JSON null", `null`, "hi", `{}`},
		{"an array", `[{"type":"object"}]`, "hi", `{}`},
		{"a string", `"object"`, "hi", `{}`},
		{"not an object schema", `{"type":"string"}`, "hi", `{}`},
		{"properties not an object", `{"type":"object","properties":[{"type":"string"}],"required":["a"]}`, "hi", `{}`},
		{"properties null", `{"type":"object","properties":null}`, "hi", `{}`},
		{"properties a string", `{"properties":"x","required":["a"]}`, "hi", `{}`},
		{"empty object schema", `{"type":"object"}`, "hi", `{}`},
		{"no type, no properties", `{}`, "hi", `{}`},
		{"required not a list", `{"type":"object","properties":{"a":{"type":"number"}},"required":"a"}`, "1", `{}`},
		{"required names not strings, repeated", `{"type":"object","properties":{"a":{"type":"number"}},"required":[1,"a","a",null]}`, "4 5", `{"a":4}`},
		{"property schema not an object", `{"type":"object","properties":{"a":5},"required":["a"]}`, "hi", `{"a":"demo a"}`},
		{"required without property", `{"type":"object","required":["q"]}`, "hi", `{"q":"demo q"}`},
		{"type list with object", `{"type":["null","object"],"properties":{"s":{"type":"string"}}}`, "hi", `{"s":"hi"}`},
		{"a number too big for float64", `{"properties":{"n":{"type":"number"}},"required":["n"]}`, strings.Repeat("9", 400) + " 3", `{"n":3}`},
		{"nested object filled", `{"properties":{"o":{"type":"object","properties":{"p":{"type":"integer"}},"required":["p"]}},"required":["o"]}`, "8", `{"o":{"p":0}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := demoToolArgs(json.RawMessage(tt.schema), tt.text); got != tt.want {
				t.Fatalf("demoToolArgs(%s, %q) = %s, want %s", tt.schema, tt.text, got, tt.want)
			}
			resp, err := NewDemo().Stream(context.Background(), Request{Messages: []Message{user("use srv__tool " + tt.text)}, Tools: []ToolSpec{serverTool(tt.schema)}}, nil)
			if err != nil || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Arguments != tt.want {
				t.Fatalf("Stream = %+v, %v; want arguments %s", resp, err, tt.want)
			}
		})
	}
}

func FuzzDemoToolArgs(f *testing.F) {
	for _, seed := range [][2]string{
		{"use srv__tool hello", `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`},
		{"Use srv__tool tool 2 3", `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"integer"}},"required":["a","b"]}`},
		{"use srv__tool -1e999 " + strings.Repeat("9", 350), `{"properties":{"a":{"type":"number"}},"required":["a"]}`},
		{"use srv__tool \xff\xfe", `{"properties":{"s":{"type":["null","string"]},"o":{"properties":{}}},"required":["o"]}`},
		{"use srv__tool x", `{"type":"object","properties":[1],"required":["a"]}`},
		{"use srv__tool", `not json`},
		{"use nosuch__tool", ``},
		{"plain text", `{}`},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, msg, schema string) {
		req := Request{Messages: []Message{user(msg)}, Tools: []ToolSpec{serverTool(schema)}}
		resp, err := NewDemo().Stream(context.Background(), req, nil)
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		args := []string{demoToolArgs(json.RawMessage(schema), msg)}
		for _, c := range resp.ToolCalls {
			args = append(args, c.Arguments)
		}
		for _, a := range args {
			var obj map[string]any
			if err := json.Unmarshal([]byte(a), &obj); err != nil || obj == nil {
				t.Fatalf("arguments %q are not a JSON object (%v)", a, err)
			}
		}
	})
}
