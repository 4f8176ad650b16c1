package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// DemoBanner opens every text answer of the Demo provider, so nobody takes it for a model.
const DemoBanner = "(demo model — offline, no AI)"

// Names of the tools the Demo provider knows how to use when they are offered.
const (
	DemoToolClarify    = "ask_clarification"
	DemoToolDelegate   = "delegate"
	DemoToolStructured = "structured_output"
)

// demoMaxDelegates bounds the delegate calls of one answer.
const demoMaxDelegates = 4

// demoToolSep joins a server's name and its tool's name in the name of a server (MCP) tool as
// it is offered: <server>__<tool>.
const demoToolSep = "__"

// Demo is an offline, deterministic Provider that shows the system without a key. It is not a
// model and says so: every text answer starts with DemoBanner. It decides from the request
// alone, in this order:
//
//  1. tool results in the current turn (after the last user message): a markdown summary
//     listing each result, a server tool's by its name;
//  2. a last user message saying "use <server>__<tool>" (any case, optionally "tool" after the
//     name): one call of that offered tool, its arguments the text after the name fitted to the
//     tool's schema (the text in the first string property, numbers in the text in the required
//     number properties, the other required properties filled as for structured_output); if no
//     tool of that exact name is offered, a reply listing the server tools that are;
//  3. a structured_output tool offered: call it with arguments built to fit its schema;
//  4. a vague last user message (under 3 words, or a bare "help me") with ask_clarification
//     offered: ask what to help with, as a choice;
//  5. a request of several parts (lines, numbered items, "; ", " and also ") with delegate
//     offered: one delegate call per part, at most 4;
//  6. otherwise a short markdown reply echoing what it understood.
//
// The same request always gets the same answer. Safe for concurrent use.
type Demo struct{}

var _ Provider = Demo{}

// NewDemo returns the demo provider.
func NewDemo() Demo { return Demo{} }

// Name reports "demo".
func (Demo) Name() string { return "demo" }

// Stream answers req as described on Demo, streaming text answers in a few deltas.
func (Demo) Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, fmt.Errorf("llm: demo: %w", err)
	}
	resp := demoAnswer(req)
	if onDelta != nil {
		for _, piece := range demoPieces(resp.Content, 4) {
			if err := ctx.Err(); err != nil {
				return Response{}, fmt.Errorf("llm: demo: %w", err)
			}
			onDelta(Delta{Content: piece})
		}
	}
	resp.Usage = Usage{PromptTokens: demoWords(req), CompletionTokens: len(strings.Fields(resp.Content)) + len(resp.ToolCalls)}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	return resp, nil
}

func demoAnswer(req Request) Response {
	last := -1
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == RoleUser {
			last = i
			break
		}
	}
	var text string
	if last >= 0 {
		text = strings.TrimSpace(req.Messages[last].Content)
	}
	var results []Message
	for _, m := range req.Messages[last+1:] {
		if m.Role == RoleTool {
			results = append(results, m)
		}
	}
	idBase := fmt.Sprintf("demo_%d_", len(req.Messages))
	use, named, rest := demoUse(req, text)
	switch {
	case len(results) > 0:
		return demoText(demoSummary(req.Messages, results))
	case use != nil:
		// The id counts the messages, as idBase does, so a later turn's call gets a new one.
		id := fmt.Sprintf("call_demo_tool_%d", len(req.Messages))
		return demoCalls(ToolCall{ID: id, Name: use.Name, Arguments: demoToolArgs(use.Parameters, rest)})
	case named != "":
		return demoText(demoNoSuchTool(req, named))
	case demoOffered(req, DemoToolStructured) != nil:
		args := demoFill(demoOffered(req, DemoToolStructured).Parameters)
		return demoCalls(ToolCall{ID: idBase + "1", Name: DemoToolStructured, Arguments: args})
	case demoVague(text) && demoOffered(req, DemoToolClarify) != nil:
		args, _ := json.Marshal(map[string]any{
			"question": "Your request is short — what should I help with? " + DemoBanner,
			"fields": []map[string]any{{
				"id": "topic", "label": "What should I help with?", "kind": "choice",
				"options":  []string{"Summarize something", "Plan a task", "Answer a question"},
				"required": true,
			}},
			"allow_free_text": true,
		})
		return demoCalls(ToolCall{ID: idBase + "1", Name: DemoToolClarify, Arguments: string(args)})
	}
	parts := demoSplit(text)
	if len(parts) > 1 && demoOffered(req, DemoToolDelegate) != nil {
		if len(parts) > demoMaxDelegates {
			rest := strings.Join(parts[demoMaxDelegates-1:], "; ")
			parts = append(parts[:demoMaxDelegates-1:demoMaxDelegates-1], rest)
		}
		calls := make([]ToolCall, len(parts))
		for i, p := range parts {
			args, _ := json.Marshal(map[string]string{"task": p, "mode": "spawn"})
			calls[i] = ToolCall{ID: fmt.Sprintf("%s%d", idBase, i+1), Name: DemoToolDelegate, Arguments: string(args)}
		}
		return demoCalls(calls...)
	}
	return demoText(demoEcho(text, parts))
}

func demoText(s string) Response { return Response{Content: s, Finish: FinishStop} }

func demoCalls(calls ...ToolCall) Response {
	return Response{ToolCalls: calls, Finish: FinishToolCalls}
}

// demoOffered returns the offered tool named name, or nil.
func demoOffered(req Request, name string) *ToolSpec {
	for i := range req.Tools {
		if req.Tools[i].Name == name {
			return &req.Tools[i]
		}
	}
	return nil
}

// demoUseRe finds "use <name>" where the name, in the characters of an offered name, is a
// server's name and a tool's joined by the separator.
var demoUseRe = regexp.MustCompile(`(?i)\buse\s+([A-Za-z0-9_-]+` + demoToolSep + `[A-Za-z0-9_-]+)`)

// demoToolWord is the optional word "tool" after the name in "use <name> tool ...".
var demoToolWord = regexp.MustCompile(`(?i)^\s+tool\b`)

// demoUse finds in text the first "use <name>" whose name is a server tool offered in req, and
// returns its spec and the text after the name (and after an optional "tool", ':' or ','),
// trimmed. When text names server tools but none of them is offered, spec is nil and named is
// the first name; when text names none, both are empty.
func demoUse(req Request, text string) (spec *ToolSpec, named, rest string) {
	for _, m := range demoUseRe.FindAllStringSubmatchIndex(text, -1) {
		name := text[m[2]:m[3]]
		if named == "" {
			named = name
		}
		if spec = demoOffered(req, name); spec == nil {
			continue
		}
		rest = text[m[3]:]
		if loc := demoToolWord.FindStringIndex(rest); loc != nil {
			rest = rest[loc[1]:]
		}
		rest = strings.TrimSpace(rest)
		rest = strings.TrimSpace(strings.TrimLeft(rest, ":,"))
		return spec, name, rest
	}
	return nil, named, ""
}

// demoNoSuchTool answers a request to use a server tool that is not offered: it says so and
// lists the server tools that are.
func demoNoSuchTool(req Request, named string) string {
	var offered []string
	seen := map[string]bool{}
	for _, t := range req.Tools {
		if strings.Contains(t.Name, demoToolSep) && !seen[t.Name] {
			seen[t.Name] = true
			offered = append(offered, "`"+t.Name+"`")
		}
	}
	var b strings.Builder
	b.WriteString(DemoBanner + "\n\n")
	fmt.Fprintf(&b, "No tool named `%s` is available to me here.", demoShort(named, 80))
	if len(offered) == 0 {
		b.WriteString(" No server tools are offered to me here.\n")
	} else {
		fmt.Fprintf(&b, " The server %s I can use here: %s.\n", plural(len(offered), "tool"), strings.Join(offered, ", "))
	}
	return b.String()
}

// demoNumberRe finds the numbers in the text given to a server tool.
var demoNumberRe = regexp.MustCompile(`-?\d+(?:\.\d+)?`)

// demoToolArgs builds the arguments of a server tool from the text the user gave it and the
// tool's JSON schema: the first string property — required ones in their order first, then all
// by name — gets the text (when there is any); each required number or integer property gets
// the next number found in the text; every other required property is filled as demoFill does.
// Properties with a const or an enum keep theirs. A schema that is missing, not JSON, not an
// object schema or whose properties are not an object gives "{}".
func demoToolArgs(schema json.RawMessage, text string) string {
	var s map[string]any
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil || demoType(s) != "object" {
		return "{}"
	}
	props := map[string]any{}
	if p, ok := s["properties"]; ok {
		if props, ok = p.(map[string]any); !ok {
			return "{}"
		}
	}
	var required []string
	seen := map[string]bool{}
	list, _ := s["required"].([]any)
	for _, r := range list {
		if k, ok := r.(string); ok && !seen[k] {
			seen[k] = true
			required = append(required, k)
		}
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	propSchema := func(k string) map[string]any {
		ps, _ := props[k].(map[string]any)
		if ps == nil {
			ps = map[string]any{}
		}
		return ps
	}

	out := map[string]any{}
	if text != "" {
		for _, k := range append(append([]string(nil), required...), names...) {
			if ps := propSchema(k); demoType(ps) == "string" && demoFree(ps) {
				out[k] = text
				break
			}
		}
	}
	var nums []float64
	for _, n := range demoNumberRe.FindAllString(text, -1) {
		if f, err := strconv.ParseFloat(n, 64); err == nil && !math.IsInf(f, 0) {
			nums = append(nums, f)
		}
	}
	for _, k := range required {
		if _, done := out[k]; done {
			continue
		}
		ps := propSchema(k)
		typ := demoType(ps)
		if (typ == "number" || typ == "integer") && demoFree(ps) && len(nums) > 0 {
			n := nums[0]
			nums = nums[1:]
			if typ == "integer" {
				n = math.Trunc(n)
			}
			out[k] = n
			continue
		}
		out[k] = demoValue(ps, k, 1)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// demoFree reports whether a property's schema leaves its value free: no const, no enum.
func demoFree(s map[string]any) bool {
	_, c := s["const"]
	e, _ := s["enum"].([]any)
	return !c && len(e) == 0
}

// demoVaguePhrases are requests that say nothing about what is wanted, whatever their length.
var demoVaguePhrases = map[string]bool{
	"help me": true, "help": true, "please help me": true, "help me please": true,
	"can you help me": true, "can you help": true, "i need help": true, "do something": true,
}

func demoVague(text string) bool {
	norm := strings.ToLower(strings.Trim(strings.TrimSpace(text), ".!?,;: "))
	return len(strings.Fields(norm)) < 3 || demoVaguePhrases[norm]
}

// demoItem matches the start of a numbered or bulleted item: "1. ", "2) ", "- ", "* ", "• ".
var demoItem = regexp.MustCompile(`(?:^|\s)(?:\d{1,2}[.)]|[-*•])\s+`)

// demoSplit cuts a request into its parts: lines, numbered or bulleted items, "; " and
// " and also ". Empty parts are dropped.
func demoSplit(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, item := range demoItem.Split(line, -1) {
			for _, semi := range strings.Split(item, "; ") {
				for _, p := range strings.Split(semi, " and also ") {
					if p = strings.Trim(strings.TrimSpace(p), ",;"); p != "" {
						out = append(out, strings.TrimSpace(p))
					}
				}
			}
		}
	}
	return out
}

// demoSummary lists each tool result of the current turn in words a user reads: a delegation by
// the name or task it was given, an answer to a question as the user's answer, a server tool's
// result (or error) by the tool's <server>__<tool> name — the user asked for it by that name —
// anything else as a result, never by the name of one of the lead's own tools. The demo banner a subagent's
// own answer opens with is left out; the summary has its own.
func demoSummary(history, results []Message) string {
	calls := map[string]ToolCall{}
	for _, m := range history {
		for _, tc := range m.ToolCalls {
			calls[tc.ID] = tc
		}
	}
	var b strings.Builder
	b.WriteString(DemoBanner + "\n\n")
	if len(results) == 1 && calls[results[0].ToolCallID].Name == DemoToolClarify {
		fmt.Fprintf(&b, "You answered: %s\n", orNoOutput(demoResult(results[0].Content)))
		b.WriteString("\nI am the offline demo, so I cannot really help with it. Set `DEEPSEEK_API_KEY` to talk to a real model.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "**Here is what came back** (%d %s):\n\n", len(results), plural(len(results), "result"))
	for i, r := range results {
		fmt.Fprintf(&b, "%d. **%s** — %s\n", i+1, demoLabel(calls[r.ToolCallID]), orNoOutput(demoResult(r.Content)))
	}
	return b.String()
}

// demoLabel is what a user calls the result of call: the delegated task (or the name the
// delegation gave it), "Your answer" for a question, the tool's name for a server tool
// (<server>__<tool>), "Result" for anything else.
func demoLabel(call ToolCall) string {
	switch call.Name {
	case DemoToolDelegate:
		var args struct{ Name, Task string }
		_ = json.Unmarshal([]byte(call.Arguments), &args)
		switch {
		case strings.TrimSpace(args.Name) != "":
			return demoShort(args.Name, 60)
		case strings.TrimSpace(args.Task) != "":
			return demoShort(args.Task, 60)
		}
		return "Subagent"
	case DemoToolClarify:
		return "Your answer"
	}
	if strings.Contains(call.Name, demoToolSep) {
		return call.Name
	}
	return "Result"
}

// demoAnsweredPrefix opens the tool result of an answered question (core/lead writes it for
// the model); the summary shows only the answer.
const demoAnsweredPrefix = "The user answered:"

// demoResult is a tool result's content shortened for the summary, without the demo banner or
// the answered-question preamble.
func demoResult(content string) string {
	content = strings.TrimSpace(strings.ReplaceAll(content, DemoBanner, ""))
	content = strings.TrimSpace(strings.TrimPrefix(content, demoAnsweredPrefix))
	return demoShort(content, 200)
}

func orNoOutput(s string) string {
	if s == "" {
		return "_(no output)_"
	}
	return s
}

// demoEcho is the plain answer: what the demo understood of text.
func demoEcho(text string, parts []string) string {
	var b strings.Builder
	b.WriteString(DemoBanner + "\n\n")
	if text == "" {
		b.WriteString("I did not get a message to answer.\n")
	} else {
		kind := "a request"
		if strings.HasSuffix(text, "?") {
			kind = "a question"
		}
		words := len(strings.Fields(text))
		fmt.Fprintf(&b, "I understood %s of %d %s", kind, words, plural(words, "word"))
		if len(parts) > 1 {
			fmt.Fprintf(&b, " in %d parts:\n\n", len(parts))
			for i, p := range parts {
				fmt.Fprintf(&b, "%d. %s\n", i+1, demoShort(p, 120))
			}
		} else {
			fmt.Fprintf(&b, ":\n\n> %s\n", demoShort(text, 200))
		}
	}
	b.WriteString("\nI am the offline demo, so I cannot really answer. Set `DEEPSEEK_API_KEY` to talk to a real model.\n")
	return b.String()
}

// demoFill builds arguments that fit a JSON schema: required properties only, strings as short
// text, numbers 0, booleans false, arrays empty, objects filled the same way; const and enum
// win over type.
func demoFill(schema json.RawMessage) string {
	var s map[string]any
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return "{}"
	}
	v := demoValue(s, "", 0)
	if _, ok := v.(map[string]any); !ok {
		return "{}"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}

func demoValue(s map[string]any, name string, depth int) any {
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	switch demoType(s) {
	case "object":
		out := map[string]any{}
		if depth > 8 {
			return out
		}
		props, _ := s["properties"].(map[string]any)
		required, _ := s["required"].([]any)
		keys := make([]string, 0, len(required))
		for _, r := range required {
			if k, ok := r.(string); ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, _ := props[k].(map[string]any)
			if ps == nil {
				ps = map[string]any{}
			}
			out[k] = demoValue(ps, k, depth+1)
		}
		return out
	case "array":
		return []any{}
	case "number", "integer":
		return 0
	case "boolean":
		return false
	case "null":
		return nil
	default:
		if name == "" {
			return "demo"
		}
		return "demo " + name
	}
}

// demoType is the type schema s describes: its "type", the first type other than "null" of a
// list of types, or "object" when it has no type but has properties.
func demoType(s map[string]any) string {
	typ, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok {
		for _, t := range ts {
			if t, _ := t.(string); t != "null" && t != "" {
				typ = t
				break
			}
		}
	}
	if typ == "" {
		if _, ok := s["properties"]; ok {
			typ = "object"
		}
	}
	return typ
}

// demoPieces cuts s into at most n pieces at spaces, so a text answer streams in a few deltas.
func demoPieces(s string, n int) []string {
	if s == "" {
		return nil
	}
	size := len(s)/n + 1
	var out []string
	for len(s) > size {
		cut := strings.IndexByte(s[size:], ' ')
		if cut < 0 {
			break
		}
		cut += size + 1
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return append(out, s)
}

// demoShort puts s on one line and shortens it to about n bytes.
func demoShort(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	return shorten(s, n)
}

func demoWords(req Request) int {
	n := 0
	for _, s := range req.System {
		n += len(strings.Fields(s))
	}
	for _, m := range req.Messages {
		n += len(strings.Fields(m.Content))
	}
	return n
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
