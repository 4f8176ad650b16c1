package lead_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/lead"
	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper"))
}

// newStore returns a thread store on the real Redis under a prefix of its own, removed after.
func newStore(t *testing.T) *threads.Store {
	t.Helper()
	return newStoreWith(t, threads.Options{})
}

// newStoreWith is newStore with opts (its Prefix is the store's own).
func newStoreWith(t *testing.T, opts threads.Options) *threads.Store {
	t.Helper()
	return lead.NewTestStore(t, opts)
}

// collector is a run-event sink that keeps what it is given.
type collector struct {
	mu     sync.Mutex
	events []runs.Event
}

func (c *collector) Deliver(_ context.Context, ev runs.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, ev)
	return nil
}

func (c *collector) kinds() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, e := range c.events {
		parts = append(parts, string(e.Kind))
	}
	return strings.Join(parts, " ")
}

func (c *collector) last() runs.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.events[len(c.events)-1]
}

var testConv = conv.Key{Platform: "console", Chat: "local"}

func envelope(kind runs.Kind, text string) *runs.Envelope {
	return &runs.Envelope{
		RunID: runs.NewRunID(), Kind: kind, Conv: testConv, Text: text, CreatedAt: time.Now(), Attempt: 1,
		Identity: conv.Identity{Platform: "console", ChannelUserID: "U1", DisplayName: "Ada"},
	}
}

func isLead(req llm.Request) bool {
	return len(req.System) > 0 && strings.Contains(req.System[0], "You are Switchboard")
}

func hasTool(req llm.Request, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func lastMessage(req llm.Request) llm.Message { return req.Messages[len(req.Messages)-1] }

// tripModel scripts the lead: delegate three parts (one structured), then ask how many travel,
// then answer with what the answer said. Children answer their task; the structured one
// reports through structured_output.
func tripModel() *llm.Scripted {
	return llm.ScriptFunc(func(req llm.Request) llm.Reply {
		last := lastMessage(req)
		if !isLead(req) {
			if hasTool(req, "structured_output") {
				return llm.Reply{ToolCalls: []llm.ToolCall{{ID: "s1", Name: "structured_output", Arguments: `{"city":"Lisbon","days":3}`}}}
			}
			return llm.Reply{Text: "result for: " + last.Content}
		}
		switch {
		case last.Role == llm.RoleUser:
			return llm.Reply{ToolCalls: []llm.ToolCall{
				{ID: "d1", Name: "delegate", Arguments: `{"task":"find flights","name":"flights"}`},
				{ID: "d2", Name: "delegate", Arguments: `{"task":"find hotels","name":"hotels","mode":"fork"}`},
				{ID: "d3", Name: "delegate", Arguments: `{"task":"pick a city","name":"city","output_schema":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"]}}`},
			}}
		case last.Role == llm.RoleTool && strings.HasPrefix(last.Content, "The user answered:"):
			return llm.Reply{Text: "Booked for " + strings.TrimPrefix(last.Content, "The user answered:\n") + "."}
		default:
			return llm.Reply{ToolCalls: []llm.ToolCall{{ID: "q1", Name: "ask_clarification",
				Arguments: `{"question":"How many people travel?","fields":[{"id":"people","label":"People","kind":"choice","options":["1","2","4"],"required":true}]}`}}}
		}
	})
}

func newTeam(t *testing.T, p llm.Provider, store *threads.Store) *lead.Team {
	t.Helper()
	team, err := lead.NewTeam(p, store, lead.Options{ProgressEvery: time.Hour, MaxConcurrent: 4, MaxDepth: 2, NudgeRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(team.Close)
	return team
}

func TestLeadChainDelegatesAsksAndFinishes(t *testing.T) {
	store := newStore(t)
	p := tripModel()
	team := newTeam(t, p, store)
	ctx := context.Background()

	first := &collector{}
	out, err := team.HandleRun(ctx, runs.NewRun(envelope(runs.KindMessage, "plan a trip"), first))
	if err != nil || out != runs.OutcomeWaiting {
		t.Fatalf("first run: %v %v", out, err)
	}
	// Each child's start and result are told; parallel children's may interleave.
	if got, want := strings.ReplaceAll(first.kinds(), " subagent_started", ""), "started subagent_result subagent_result subagent_result clarification"; got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	if n := strings.Count(first.kinds(), "subagent_started"); n != 3 {
		t.Fatalf("%d subagent_started events, want 3: %s", n, first.kinds())
	}
	names := map[string]runs.SubagentInfo{}
	for _, e := range first.events {
		if e.Kind == runs.EventSubagentResult {
			names[e.Subagent.Name] = *e.Subagent
		}
	}
	if names["flights"].Summary != "result for: find flights" || names["flights"].StopReason != "completed" {
		t.Fatalf("flights: %+v", names["flights"])
	}
	for name, order := range map[string]int{"flights": 1, "hotels": 2, "city": 3} {
		if names[name].Order != order {
			t.Errorf("%s has order %d, want %d: the order the lead asked for it", name, names[name].Order, order)
		}
	}
	var city map[string]any
	if err := json.Unmarshal(names["city"].Structured, &city); err != nil || city["city"] != "Lisbon" {
		t.Fatalf("structured city: %s (%v)", names["city"].Structured, err)
	}
	q := first.last()
	if q.Form == nil || q.Form.Question != "How many people travel?" || q.Form.AllowedUserID != "U1" || q.Form.ID == "" || len(q.Form.Fields) != 1 {
		t.Fatalf("form %+v", q.Form)
	}

	answer := envelope(runs.KindClarificationAnswer, "people: 4")
	answer.ClarificationID = q.Form.ID
	second := &collector{}
	out, err = team.HandleRun(ctx, runs.NewRun(answer, second))
	if err != nil || out != runs.OutcomeAnswered {
		t.Fatalf("answer run: %v %v", out, err)
	}
	if got := second.kinds(); got != "started final" {
		t.Fatalf("answer events: %s", got)
	}
	if final := second.last(); final.Text != "Booked for people: 4." {
		t.Fatalf("final %q", final.Text)
	}

	// The history now holds the whole exchange: a follow-up sees the question's answer as the
	// tool result, in order, and a second answer to the same question is refused.
	again := envelope(runs.KindClarificationAnswer, "people: 2")
	again.ClarificationID = q.Form.ID
	third := &collector{}
	out, _ = team.HandleRun(ctx, runs.NewRun(again, third))
	if out != runs.OutcomeFailed || !strings.Contains(third.last().Reason, "already answered") {
		t.Fatalf("second answer: %v %+v", out, third.last())
	}
	raw, err := store.History().LoadEvents(ctx, testConv.String())
	if err != nil || len(raw) == 0 {
		t.Fatalf("history: %d %v", len(raw), err)
	}
	var tail []string
	for _, r := range raw[len(raw)-4:] {
		tail = append(tail, string(r))
	}
	if !strings.Contains(strings.Join(tail, "\n"), `"content":"Booked for people: 4."`) || !strings.Contains(tail[3], `"turn/end"`) {
		t.Fatalf("history does not end with the answer's turn:\n%s", strings.Join(tail, "\n"))
	}
	joined := ""
	for _, r := range raw {
		joined += string(r)
	}
	if !strings.Contains(joined, `The user answered:\npeople: 4`) || strings.Contains(joined, "the run waits for the answer") {
		t.Fatal("the stored history must carry the answer as the question's tool result")
	}
}

func TestHiddenContextNeverReachesUsers(t *testing.T) {
	store := newStore(t)
	const secret = "SYSTEM-SECRET-SECTION"
	calls := 0
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		calls++
		if calls == 1 {
			return llm.Reply{Text: "let me look (step text)", Reasoning: "REASONING-HIDDEN",
				ToolCalls: []llm.ToolCall{{ID: "t1", Name: "lookup", Arguments: `{}`}}}
		}
		return llm.Reply{Text: "The answer is 42.", Reasoning: "MORE-REASONING-HIDDEN"}
	})
	team, err := lead.NewTeam(p, store, lead.Options{System: "You are Switchboard. " + secret, ProgressEvery: time.Nanosecond,
		ExtraTools: []agentTool{lookupTool()}})
	if err != nil {
		t.Fatal(err)
	}
	defer team.Close()
	sink := &collector{}
	out, err := team.HandleRun(context.Background(), runs.NewRun(envelope(runs.KindMessage, "what is the answer?"), sink))
	if err != nil || out != runs.OutcomeAnswered {
		t.Fatalf("%v %v", out, err)
	}
	all, _ := json.Marshal(sink.events)
	for _, hidden := range []string{secret, "REASONING-HIDDEN", "TOOL-OUTPUT-HIDDEN", "step text"} {
		if strings.Contains(string(all), hidden) {
			t.Fatalf("%q leaked to users: %s", hidden, all)
		}
	}
	if final := sink.last(); final.Kind != runs.EventFinal || final.Text != "The answer is 42." {
		t.Fatalf("final %+v", final)
	}
}

func TestCallerReachesToolsFromTheEnvelope(t *testing.T) {
	store := newStore(t)
	p := llm.NewScripted(
		llm.Reply{ToolCalls: []llm.ToolCall{{ID: "w", Name: "whoami", Arguments: `{"user":"U-FORGED-BY-MODEL"}`}}},
		llm.Reply{Text: "done"},
	)
	seen := make(chan lead.Caller, 1)
	team, err := lead.NewTeam(p, store, lead.Options{ExtraTools: []agentTool{whoamiTool(seen)}})
	if err != nil {
		t.Fatal(err)
	}
	defer team.Close()
	env := envelope(runs.KindMessage, "who am i")
	env.Identity.Admin = true
	if _, err := team.HandleRun(context.Background(), runs.NewRun(env, nil)); err != nil {
		t.Fatal(err)
	}
	c := <-seen
	if c.ChannelUserID != "U1" || !c.Admin || c.RunID != env.RunID {
		t.Fatalf("caller %+v", c)
	}
}

func TestExpiredClarificationGetsAClearMessage(t *testing.T) {
	store := newStore(t)
	team := newTeam(t, llm.NewScripted(), store)
	env := envelope(runs.KindClarificationAnswer, "anything")
	env.ClarificationID = "q-does-not-exist"
	sink := &collector{}
	out, err := team.HandleRun(context.Background(), runs.NewRun(env, sink))
	if err != nil || out != runs.OutcomeFailed || !strings.Contains(sink.last().Reason, "expired") {
		t.Fatalf("%v %v %+v", out, err, sink.events)
	}
}

func TestReplayedRunReEmitsWithoutRunningAgain(t *testing.T) {
	store := newStore(t)
	p := llm.NewScripted(llm.Reply{Text: "only once"})
	team := newTeam(t, p, store)
	env := envelope(runs.KindMessage, "hello")
	if _, err := team.HandleRun(context.Background(), runs.NewRun(env, nil)); err != nil {
		t.Fatal(err)
	}
	sink := &collector{}
	env.Attempt = 2
	out, err := team.HandleRun(context.Background(), runs.NewRun(env, sink))
	if err != nil || out != runs.OutcomeAnswered || p.Calls() != 1 {
		t.Fatalf("replay: %v %v calls=%d", out, err, p.Calls())
	}
	if sink.last().Text != "only once" {
		t.Fatalf("replayed event %+v", sink.last())
	}
}

func TestClarificationLimitsAreToolErrors(t *testing.T) {
	store := newStore(t)
	many := make([]string, 26)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprint("o", i))
	}
	bad := `{"question":"pick","fields":[{"id":"x","label":"X","kind":"choice","options":[` + strings.Join(many, ",") + `]}]}`
	p := llm.NewScripted(
		llm.Reply{ToolCalls: []llm.ToolCall{{ID: "q", Name: "ask_clarification", Arguments: bad}}},
		llm.Reply{Text: "fine, no question"},
	)
	team := newTeam(t, p, store)
	sink := &collector{}
	out, err := team.HandleRun(context.Background(), runs.NewRun(envelope(runs.KindMessage, "x"), sink))
	if err != nil || out != runs.OutcomeAnswered {
		t.Fatalf("%v %v", out, err)
	}
	second := p.Requests()[1]
	res := lastMessage(second)
	if res.Role != llm.RoleTool || !strings.Contains(res.Content, "26 choices; the limit is 25") {
		t.Fatalf("tool error %+v", res)
	}
}

// TestReplayedRunKeepsOneHistoryTurn proves the end of a run is recorded with its history turn
// in one step: a redelivered run — answered or failed — re-emits its closing event and never
// appends to the history again.
func TestReplayedRunKeepsOneHistoryTurn(t *testing.T) {
	cases := []struct {
		name     string
		env      *runs.Envelope
		wantKind runs.EventKind
		wantOut  runs.Outcome
		wantHist int
	}{
		{"answered", envelope(runs.KindMessage, "hello"), runs.EventFinal, runs.OutcomeAnswered, 2},
		{"failed", envelope(runs.KindClarificationAnswer, "late"), runs.EventFailed, runs.OutcomeFailed, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := newStore(t)
			p := llm.NewScripted(llm.Reply{Text: "only once"})
			team := newTeam(t, p, store)
			ctx := context.Background()
			first := &collector{}
			if out, err := team.HandleRun(ctx, runs.NewRun(tc.env, first)); err != nil || out != tc.wantOut {
				t.Fatalf("first attempt = %v, %v", out, err)
			}
			hist, err := store.History().LoadEvents(ctx, testConv.String())
			if err != nil || len(hist) < tc.wantHist {
				t.Fatalf("history after the first attempt: %d events, %v", len(hist), err)
			}
			replay := &collector{}
			tc.env.Attempt = 2
			out, err := team.HandleRun(ctx, runs.NewRun(tc.env, replay))
			if err != nil || out != tc.wantOut || replay.last().Kind != tc.wantKind || replay.last().Text != first.last().Text {
				t.Fatalf("replay = %v, %v, %+v; want %v re-emitting %+v", out, err, replay.last(), tc.wantOut, first.last())
			}
			if again, _ := store.History().LoadEvents(ctx, testConv.String()); len(again) != len(hist) {
				t.Errorf("history grew on replay: %d → %d events", len(hist), len(again))
			}
		})
	}
}

// TestNoAnswerNamesATool runs the offline demo model's scripted flows through the lead chain — a
// plain question, a vague request answered through its question, a request split over parallel
// delegations — and proves nothing a user sees (answers, questions, subagent names and
// summaries, progress, reasons) names a tool or a subagent backend.
func TestNoAnswerNamesATool(t *testing.T) {
	store := newStore(t)
	team := newTeam(t, llm.NewDemo(), store)
	ctx := context.Background()
	var seen []runs.Event
	handle := func(env *runs.Envelope, want runs.Outcome) *collector {
		t.Helper()
		c := &collector{}
		out, err := team.HandleRun(ctx, runs.NewRun(env, c))
		if err != nil || out != want {
			t.Fatalf("%q: outcome %v, %v; want %v (events %s)", env.Text, out, err, want, c.kinds())
		}
		seen = append(seen, c.events...)
		return c
	}
	handle(envelope(runs.KindMessage, "What is the capital of France?"), runs.OutcomeAnswered)
	parts := handle(envelope(runs.KindMessage, "summarize the news; plan a trip and also write a poem"), runs.OutcomeAnswered)
	if n := strings.Count(parts.kinds(), "subagent_result"); n != 3 {
		t.Fatalf("%d subagent results, want 3: %s", n, parts.kinds())
	}
	q := handle(envelope(runs.KindMessage, "help me"), runs.OutcomeWaiting).last()
	if q.Form == nil {
		t.Fatalf("no question: %+v", q)
	}
	answer := envelope(runs.KindClarificationAnswer, "What should I help with?: Plan a task")
	answer.ClarificationID = q.Form.ID
	if final := handle(answer, runs.OutcomeAnswered).last(); !strings.Contains(final.Text, "Plan a task") {
		t.Fatalf("the answer to the question does not use it: %q", final.Text)
	}

	for _, ev := range seen {
		shown := []string{ev.Text, ev.Reason}
		if s := ev.Subagent; s != nil {
			shown = append(shown, s.Name, s.Summary, string(s.Structured))
		}
		if f := ev.Form; f != nil {
			shown = append(shown, f.Question)
			for _, fl := range f.Fields {
				shown = append(shown, fl.Label)
				shown = append(shown, fl.Options...)
			}
		}
		for _, s := range shown {
			for _, internal := range []string{"delegate", "ask_clarification", "structured_output", "spawn", "fork"} {
				if strings.Contains(s, internal) {
					t.Errorf("a %s event shows %q:\n%s", ev.Kind, internal, s)
				}
			}
		}
	}
}

// failingFinal refuses the closing events it is given while fail is set, as a platform that
// is down refuses the send.
type failingFinal struct {
	collector
	fail bool
}

func (f *failingFinal) Deliver(ctx context.Context, ev runs.Event) error {
	if f.fail && ev.Kind.Terminal() {
		return errors.New("platform answered 502")
	}
	return f.collector.Deliver(ctx, ev)
}

// TestUndeliveredClosingEventIsTriedAgain proves a run whose answer the platform refused is not
// counted answered: it returns an outage (the pool tries it again on the outage schedule), and
// the next try delivers the recorded answer without calling the model again.
func TestUndeliveredClosingEventIsTriedAgain(t *testing.T) {
	store := newStore(t)
	p := llm.NewScripted(llm.Reply{Text: "the answer"})
	team := newTeam(t, p, store)
	env := envelope(runs.KindMessage, "hello")
	sink := &failingFinal{fail: true}
	out, err := team.HandleRun(context.Background(), runs.NewRun(env, sink))
	if u, ok := errors.AsType[*runs.UnavailableError](err); !ok || out != "" || u.Reason == "" {
		t.Fatalf("first try: %q, %v; want an *runs.UnavailableError with a reason", out, err)
	}
	// Still down at the second try: an outage again, and the model is not asked again.
	env.Attempt = 2
	if _, err := team.HandleRun(context.Background(), runs.NewRun(env, sink)); !errors.As(err, new(*runs.UnavailableError)) || p.Calls() != 1 {
		t.Fatalf("second try: %v, model calls %d; want an outage and 1 call", err, p.Calls())
	}
	sink.fail = false
	env.Attempt = 3
	out, err = team.HandleRun(context.Background(), runs.NewRun(env, sink))
	if err != nil || out != runs.OutcomeAnswered || p.Calls() != 1 {
		t.Fatalf("third try: %q, %v, model calls %d; want answered from the record, 1 call", out, err, p.Calls())
	}
	if last := sink.last(); last.Kind != runs.EventFinal || last.Text != "the answer" {
		t.Fatalf("delivered %+v, want the recorded answer", last)
	}
	if ev, _ := store.History().LoadEvents(context.Background(), testConv.String()); len(ev) == 0 {
		t.Error("the answered turn is not in the history")
	}
}
