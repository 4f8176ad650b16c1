package subagent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
)

// childSchema pins a child's own index as a const, so a value can only match one child's schema.
func childSchema(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"n":{"type":"integer","const":%d},"who":{"type":"string"}},"required":["n","who"],"additionalProperties":false}`, i))
}

// isolatedChildModel answers each child from what its own request shows: a structured child
// reports the const of the one schema it was offered, a plain child echoes its prompt. Any
// request showing another child's schema, or a schema to a plain child, is recorded as a leak.
type isolatedChildModel struct {
	// fast reads the const by scanning instead of decoding JSON (for benchmarks, where the
	// model's own cost would otherwise dominate).
	fast  bool
	mu    sync.Mutex
	leaks []string
}

// schemaConst reads properties.n.const from a child's schema.
func (m *isolatedChildModel) schemaConst(params []byte) (int, bool) {
	if m.fast {
		const key = `"const":`
		i := strings.Index(string(params), key)
		if i < 0 {
			return 0, false
		}
		rest := string(params[i+len(key):])
		end := strings.IndexAny(rest, ",}")
		n, err := strconv.Atoi(rest[:max(end, 0)])
		return n, err == nil
	}
	var s struct {
		Properties struct {
			N struct {
				Const int `json:"const"`
			} `json:"n"`
		} `json:"properties"`
	}
	err := json.Unmarshal(params, &s)
	return s.Properties.N.Const, err == nil
}

func (m *isolatedChildModel) leak(format string, args ...any) {
	m.mu.Lock()
	m.leaks = append(m.leaks, fmt.Sprintf(format, args...))
	m.mu.Unlock()
}

func (m *isolatedChildModel) reply(req llm.Request) llm.Reply {
	prompt := lastUser(req)
	if prompt == "parent question" {
		return llm.Reply{Text: "parent answer"}
	}
	i, err := strconv.Atoi(strings.TrimPrefix(prompt, "child-"))
	if err != nil {
		m.leak("unexpected prompt %q", prompt)
		return llm.Reply{Text: "?"}
	}
	spec, n := findTool(req, StructuredOutputTool)
	structured := i%2 == 0
	switch {
	case !structured && n != 0:
		m.leak("plain child %d was offered structured_output", i)
	case structured && n != 1:
		m.leak("structured child %d was offered %d structured_output tools", i, n)
	case structured:
		n, ok := m.schemaConst(spec.Parameters)
		if !ok || n != i {
			m.leak("child %d saw the schema of child %d", i, n)
		}
		if req.System[len(req.System)-1] != StructuredInstruction {
			m.leak("child %d: instruction not last", i)
		}
		return capture("c", `{"n":`+strconv.Itoa(n)+`,"who":"`+prompt+`"}`)
	}
	for _, s := range req.System {
		if s == StructuredInstruction {
			m.leak("plain child %d got the instruction", i)
		}
	}
	return llm.Reply{Text: "out-" + prompt}
}

func TestManyConcurrentChildrenIsolated(t *testing.T) {
	const children = 200
	model := &isolatedChildModel{}
	f := newFixture(t, llm.ScriptFunc(model.reply))
	parent := parentWithTurn(t, f, agent.CreateOptions{})

	runs := make([]*Run, children)
	var wg sync.WaitGroup
	errs := make(chan error, children)
	for i := range children {
		wg.Go(func() {
			req := StartRequest{Prompt: fmt.Sprintf("child-%d", i), Parent: parent}
			if i%2 == 0 {
				req.OutputSchema = childSchema(i)
			}
			provider := "spawn"
			if i%4 >= 2 {
				provider = "fork"
			}
			run, err := f.svc.Start(context.Background(), provider, req)
			if err != nil {
				errs <- err
				return
			}
			runs[i] = run
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, run := range runs {
		res := settle(t, run)
		if res.StopReason != StopCompleted {
			t.Fatalf("child %d: %+v", i, res)
		}
		if i%2 == 0 {
			if want := fmt.Sprintf(`{"n":%d,"who":"child-%d"}`, i, i); string(res.Structured) != want {
				t.Fatalf("child %d returned %s, want %s", i, res.Structured, want)
			}
		} else if res.Structured != nil || res.Output != fmt.Sprintf("out-child-%d", i) {
			t.Fatalf("child %d returned %q / %s", i, res.Output, res.Structured)
		}
		if err := run.Dispose(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if len(model.leaks) > 0 {
		t.Fatalf("%d isolation failures, first: %s", len(model.leaks), model.leaks[0])
	}
	if n := len(f.rt.List()); n != 1 || structuredRefs(f.rt) != 2 {
		t.Fatalf("%d agents and %d refs left", n, structuredRefs(f.rt))
	}
}
