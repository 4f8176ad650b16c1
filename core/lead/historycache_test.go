package lead_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/lead"
	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
)

// recordingModel answers every lead request with a numbered reply and keeps the messages each
// request carried: the history the model was sent.
type recordingModel struct {
	mu   sync.Mutex
	sent [][]llm.Message
}

func (m *recordingModel) provider() *llm.Scripted {
	return llm.ScriptFunc(func(req llm.Request) llm.Reply {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.sent = append(m.sent, append([]llm.Message(nil), req.Messages...))
		return llm.Reply{Text: fmt.Sprintf("answer %d to %q", len(m.sent), lastMessage(req).Content)}
	})
}

// TestHistoryCacheSendsTheModelTheSameHistory: a conversation served by two processes with the
// history cache (taking turns, as two workers of a shared Redis do, with /new and the log's
// trimming on the way) sends the model, run after run, exactly what the same conversation sends
// through processes without it, which read the whole log every run.
func TestHistoryCacheSendsTheModelTheSameHistory(t *testing.T) {
	store := newStoreWith(t, threads.Options{HistoryTurns: 4})
	ctx := context.Background()
	withCache, without := &recordingModel{}, &recordingModel{}
	team := func(m *recordingModel, cacheEvents int) *lead.Team {
		tm, err := lead.NewTeam(m.provider(), store, lead.Options{ProgressEvery: time.Hour, NoSubagents: true, HistoryCacheEvents: cacheEvents})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tm.Close)
		return tm
	}
	// Two processes of each kind, each pair serving one conversation.
	cachedA, cachedB := team(withCache, 0), team(withCache, 0)
	plainA, plainB := team(without, -1), team(without, -1)
	cached := conv.Key{Platform: "console", Chat: "cached"}
	plain := conv.Key{Platform: "console", Chat: "plain"}
	run := func(tm *lead.Team, k conv.Key, text string) {
		t.Helper()
		env := envelope(runs.KindMessage, text)
		env.Conv = k
		if out, err := tm.HandleRun(ctx, runs.NewRun(env, &collector{})); err != nil || out != runs.OutcomeAnswered {
			t.Fatalf("run %q = %v, %v", text, out, err)
		}
	}
	const messages = 14
	for i := range messages {
		text := fmt.Sprintf("message %d", i)
		if i == 9 { // /new in both
			for _, k := range []conv.Key{cached, plain} {
				if _, err := store.Conversations().Reset(ctx, k.String()); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Process A takes most runs, B every third: each reads the other's turns.
		if i%3 == 2 {
			run(cachedB, cached, text)
			run(plainB, plain, text)
		} else {
			run(cachedA, cached, text)
			run(plainA, plain, text)
		}
	}
	if len(withCache.sent) != messages || len(without.sent) != messages {
		t.Fatalf("%d and %d model requests, want %d each", len(withCache.sent), len(without.sent), messages)
	}
	longest := 0
	for i := range messages {
		if !reflect.DeepEqual(withCache.sent[i], without.sent[i]) {
			t.Fatalf("run %d sent the model, with the cache:\n%+v\nwithout:\n%+v", i, withCache.sent[i], without.sent[i])
		}
		longest = max(longest, len(withCache.sent[i]))
	}
	// The history was trimmed to its 4 turns (4 exchanges and the new message), and /new
	// emptied it.
	if longest != 9 || len(withCache.sent[9]) != 1 {
		t.Errorf("the longest request had %d messages, the first after /new %d; want 9 and 1", longest, len(withCache.sent[9]))
	}
}

// TestForksShareTheCachedHistory: runs of a conversation whose lead forks a subagent each time
// (the child reads the lead's history, which the cache shares) answer with their history intact,
// run after run, under the race detector.
func TestForksShareTheCachedHistory(t *testing.T) {
	store := newStoreWith(t, threads.Options{HistoryTurns: 3})
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[string]int{} // "lead" or "child" → most messages one request carried
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply {
		mu.Lock()
		defer mu.Unlock()
		who := "child"
		if isLead(req) {
			who = "lead"
		}
		seen[who] = max(seen[who], len(req.Messages))
		last := lastMessage(req)
		switch {
		case who == "child":
			return llm.Reply{Text: "the child read " + fmt.Sprint(len(req.Messages)) + " messages"}
		case last.Role == llm.RoleUser:
			return llm.Reply{ToolCalls: []llm.ToolCall{{ID: "f1", Name: "delegate", Arguments: `{"task":"look back","name":"looker","mode":"fork"}`}}}
		default:
			return llm.Reply{Text: "answered after " + last.Content}
		}
	})
	team, err := lead.NewTeam(p, store, lead.Options{ProgressEvery: time.Hour, MaxConcurrent: 2, MaxDepth: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(team.Close)
	for i := range 6 {
		c := &collector{}
		env := envelope(runs.KindMessage, fmt.Sprintf("question %d", i))
		if out, err := team.HandleRun(ctx, runs.NewRun(env, c)); err != nil || out != runs.OutcomeAnswered || c.last().Kind != runs.EventFinal {
			t.Fatalf("run %d = %v, %v, %+v", i, out, err, c.last())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("longest requests: the lead's %d messages, the child's %d", seen["lead"], seen["child"])
	// Three turns kept, each a question, the delegation and its result, and an answer.
	if seen["lead"] < 10 || seen["child"] < 10 {
		t.Errorf("the lead's longest request had %d messages and the child's %d: the history did not reach them", seen["lead"], seen["child"])
	}
}
