package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
)

// fakeProvider records starts; it lacks every capability unless told otherwise.
type fakeProvider struct {
	name   string
	caps   Capabilities
	starts int
}

func (p *fakeProvider) Name() string                { return p.name }
func (p *fakeProvider) Capabilities() Capabilities  { return p.caps }
func (p *fakeProvider) InheritsParentContext() bool { return false }
func (p *fakeProvider) Start(context.Context, StartRequest) (*Run, error) {
	p.starts++
	return nil, errors.New("fake provider does not run anything")
}

func TestServiceProviderRegistrationDuplicateUnknown(t *testing.T) {
	svc := NewService(nil)
	a := &fakeProvider{name: "remote"}
	if err := svc.Register(a); err != nil {
		t.Fatal(err)
	}
	err := svc.Register(&fakeProvider{name: "remote"})
	var dup *DuplicateProviderError
	if !errors.As(err, &dup) || !errors.Is(err, ErrDuplicateProvider) || dup.Code() != CodeDuplicateProvider || dup.Name != "remote" {
		t.Fatalf("duplicate: %v", err)
	}
	if got, ok := svc.Provider("remote"); !ok || got != a {
		t.Fatal("the first registration was replaced")
	}
	_, err = svc.Start(context.Background(), "nowhere", StartRequest{Prompt: "go"})
	var none *NoProviderError
	if !errors.As(err, &none) || !errors.Is(err, ErrNoProvider) || none.Code() != CodeNoProvider || none.Name != "nowhere" {
		t.Fatalf("unknown: %v", err)
	}
	svc.Unregister("remote")
	if _, err := svc.Start(context.Background(), "remote", StartRequest{}); !errors.Is(err, ErrNoProvider) {
		t.Fatalf("after unregister: %v", err)
	}
}

func TestServiceCapabilityGateBeforeStart(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	for _, tc := range []struct {
		name string
		caps Capabilities
		req  StartRequest
		want string // "" means the gate lets it through
	}{
		{"outputSchema checked first", Capabilities{}, StartRequest{OutputSchema: schema, MaxDepth: 1, ToolFilter: []string{}}, "outputSchema"},
		{"depthLimit second", Capabilities{OutputSchema: true}, StartRequest{OutputSchema: schema, MaxDepth: 1, ToolFilter: []string{}}, "depthLimit"},
		{"toolFilter third", Capabilities{OutputSchema: true, DepthLimit: true}, StartRequest{OutputSchema: schema, MaxDepth: 1, ToolFilter: []string{"x"}}, "toolFilter"},
		{"plain request needs nothing", Capabilities{}, StartRequest{Prompt: "go"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := NewService(nil)
			p := &fakeProvider{name: "p", caps: tc.caps}
			_ = svc.Register(p)
			_, err := svc.Start(context.Background(), "p", tc.req)
			if tc.want == "" {
				if p.starts != 1 {
					t.Fatalf("gate refused a plain request: %v", err)
				}
				return
			}
			var ue *UnsupportedCapabilityError
			if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupportedCapability) || ue.Capability != tc.want || ue.Code() != CodeUnsupportedCapability {
				t.Fatalf("err = %v, want unsupported %s", err, tc.want)
			}
			if p.starts != 0 {
				t.Fatal("the provider started before the gate refused")
			}
		})
	}
	// The real backends refuse a tool filter before creating anything.
	f := newFixture(t, llm.NewScripted())
	for _, name := range []string{"spawn", "fork"} {
		if _, err := f.svc.Start(context.Background(), name, StartRequest{Prompt: "go", ToolFilter: []string{"x"}}); !errors.Is(err, ErrUnsupportedCapability) {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := f.svc.Provider(name)
		if _, err := b.Start(context.Background(), StartRequest{ToolFilter: []string{}}); !errors.Is(err, ErrUnsupportedCapability) {
			t.Fatalf("%s direct: %v", name, err)
		}
	}
	if len(f.rt.List()) != 0 {
		t.Fatal("a refused request created a child")
	}
}

func TestServiceStartAndEndEvents(t *testing.T) {
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		if _, n := findTool(req, StructuredOutputTool); n > 0 {
			return capture("c1", `{"answer":"yes"}`)
		}
		return llm.Reply{Text: "plain answer"}
	})
	f := newFixture(t, p)
	var mu sync.Mutex
	var got []Event
	f.svc.Listen(func(e Event) error {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
		return nil
	})
	parent := f.parent(t, agent.CreateOptions{})
	plain := f.start(t, "spawn", StartRequest{Prompt: "go", Parent: parent, Name: "researcher"})
	settle(t, plain)
	structured := f.start(t, "fork", StartRequest{Prompt: "go", OutputSchema: json.RawMessage(answerSchema)})
	settle(t, structured)
	mu.Lock()
	defer mu.Unlock()
	want := []Event{
		{Kind: EventStart, Provider: "spawn", ID: plain.ID(), ParentID: parent.ID(), Name: "researcher"},
		{Kind: EventEnd, Provider: "spawn", ID: plain.ID(), ParentID: parent.ID(), Name: "researcher", StopReason: StopCompleted, LastAssistantMessage: "plain answer"},
		{Kind: EventStart, Provider: "fork", ID: structured.ID()},
		{Kind: EventEnd, Provider: "fork", ID: structured.ID(), StopReason: StopCompleted, Structured: `{"answer":"yes"}`},
	}
	if len(got) != len(want) {
		t.Fatalf("events %+v", got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g != w {
			t.Fatalf("event %d = %+v\nwant %+v", i, g, w)
		}
	}
}

func TestServiceListenerFailuresContained(t *testing.T) {
	f := newFixture(t, llm.NewScripted(llm.Reply{Text: "fine"}))
	var delivered int
	f.svc.Listen(func(Event) error { panic("listener bug") })
	f.svc.Listen(func(Event) error { return errors.New("listener refused") })
	remove := f.svc.Listen(func(Event) error { delivered++; return nil })
	res := settle(t, f.start(t, "spawn", StartRequest{Prompt: "go"}))
	if res.StopReason != StopCompleted || res.Output != "fine" {
		t.Fatalf("a failing listener broke the run: %+v", res)
	}
	if delivered != 2 {
		t.Fatalf("the healthy listener got %d events, want start and end", delivered)
	}
	if !f.log.contains("listener bug") || !f.log.contains("listener refused") {
		t.Fatal("listener failures were not logged")
	}
	remove()
	settle(t, f.start(t, "spawn", StartRequest{Prompt: "again"}))
	if delivered != 2 {
		t.Fatal("a removed listener still got events")
	}
}
