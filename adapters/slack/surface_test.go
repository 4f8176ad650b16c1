package slack

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

const setPromptsMethod = "assistant.threads.setSuggestedPrompts"

// TestAgentViewDMOpenedOffersPromptsAtItsTop proves that, for an app on features.agent_view,
// a user opening the agent's conversation (app_home_opened on the Messages tab) is offered the
// suggested prompts in that DM without a thread_ts — Slack pins them at the top of the
// conversation, and fails an agent app's call naming a thread without a word — once per event
// (a redelivery offers nothing more), after the ack; that the Home tab offers nothing; and
// that the router sees none of it.
func TestAgentViewDMOpenedOffersPromptsAtItsTop(t *testing.T) {
	h := start(t, func(c *Config) { c.SuggestedPrompts = []string{"What can you do?", "Plan my week"} })
	opened := h.fake.AppHomeOpened(ann, "D1", "messages")
	env := h.fake.Send("events_api", opened)
	eventually(t, "the ack", func() bool { return h.fake.Acked(env) })
	eventually(t, "the prompts", func() bool { return len(h.fake.CallsOf(setPromptsMethod)) == 1 })
	call := h.fake.CallsOf(setPromptsMethod)[0]
	if _, threaded := call.Params["thread_ts"]; threaded || call.Params["channel_id"] != "D1" || call.Error != "" {
		t.Fatalf("prompts %+v, want them for D1 with no thread_ts", call)
	}
	var prompts []Prompt
	if err := json.Unmarshal([]byte(call.Params["prompts"]), &prompts); err != nil ||
		!slices.Equal(prompts, []Prompt{{"What can you do?", "What can you do?"}, {"Plan my week", "Plan my week"}}) {
		t.Fatalf("prompts %s (%v)", call.Params["prompts"], err)
	}

	// The same event again (its ack lost), and the Home tab: nothing more. A later opening
	// offers them again: Slack sends app_home_opened each time.
	followupsDone(t, h,
		h.fake.Send("events_api", opened),
		h.fake.Send("events_api", h.fake.AppHomeOpened(ann, "D1", "home")),
		h.fake.Send("events_api", h.fake.AppHomeOpened(ann, "D1", "messages")))
	if n := h.fake.Count(setPromptsMethod); n != 2 {
		t.Errorf("%d offers, want 2: the redelivery and the Home tab offer none", n)
	}
	if got := h.rec.got(); len(got) != 0 {
		t.Errorf("the router was handed %+v", got)
	}
}

// TestAgentViewTopLevelDMIsAThreadTitledAfterIt proves that with AgentView a top-level message
// in the agent's DM is answered in a thread rooted at it — its own conversation, where the
// answer can stream — titled once after the message (assistant.threads.setTitle), and that a
// reply in that thread is the same conversation and titles nothing; without AgentView (an app
// still on assistant_view) a DM's top level stays one conversation, untitled.
func TestAgentViewTopLevelDMIsAThreadTitledAfterIt(t *testing.T) {
	h := start(t, func(c *Config) { c.AgentView = true })
	ts, _ := h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "  what's\nnew  " + strings.Repeat("today ", 20)})
	in := h.waitInbound(t, 1)[0]
	if in.Conv != dmThread(ts) || in.MessageID != ts || !in.Direct {
		t.Fatalf("inbound %+v, want the DM thread rooted at %s", in, ts)
	}
	if !h.ch.CanStream(channels.Target{Conv: in.Conv, ReplyTo: ts}) {
		t.Error("the agent's DM thread cannot stream")
	}
	eventually(t, "the title", func() bool { return len(h.fake.CallsOf("assistant.threads.setTitle")) == 1 })
	title := h.fake.CallsOf("assistant.threads.setTitle")[0].Params
	if title["channel_id"] != "D1" || title["thread_ts"] != ts || !strings.HasPrefix(title["title"], "what's new today") ||
		len([]rune(title["title"])) > maxTitle {
		t.Fatalf("title %v, want the message's words, at most %d characters, for the thread %s", title, maxTitle, ts)
	}

	// A reply in the thread, and the first message delivered again: no other title.
	_, reply := h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "and tomorrow?", ThreadTS: ts})
	_, again := h.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "what's new", TS: ts})
	got := h.waitInbound(t, 3)
	if got[1].Conv != dmThread(ts) || got[2].Conv != dmThread(ts) {
		t.Fatalf("the reply and the redelivery are in %+v and %+v, want %+v", got[1].Conv, got[2].Conv, dmThread(ts))
	}
	followupsDone(t, h, reply, again)
	if n := h.fake.Count("assistant.threads.setTitle"); n != 1 {
		t.Errorf("%d titles, want 1", n)
	}

	legacy := start(t, nil)
	_, env := legacy.fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "hello"})
	if in := legacy.waitInbound(t, 1)[0]; in.Conv != dmThread("") {
		t.Fatalf("without AgentView the DM message is in %+v, want the DM's top level", in.Conv)
	}
	followupsDone(t, legacy, env)
	if n := legacy.fake.Count("assistant.threads.setTitle"); n != 0 {
		t.Errorf("without AgentView a DM message made %d titles", n)
	}
}

// followupsDone waits until the envelopes are acknowledged — their handling, which gives the
// titles and prompts they call for to the follow-ups, is over — and the follow-ups have run.
func followupsDone(t *testing.T, h *harness, envelopes ...string) {
	t.Helper()
	eventually(t, "the acks and their follow-ups", func() bool {
		for _, env := range envelopes {
			if !h.fake.Acked(env) {
				return false
			}
		}
		return h.ch.surfaces.followups.Pending() == 0
	})
}

// TestAIContextEventsAreAcknowledgedAndIgnored proves the events that say what a user views
// while an AI surface is open — assistant_thread_context_changed (assistant_view) and
// app_context_changed (agent_view) — are acknowledged, read without a malformed count, handed
// to nobody and answered with no call: no run reads the user's current view.
func TestAIContextEventsAreAcknowledgedAndIgnored(t *testing.T) {
	malformed := 0
	h := start(t, func(c *Config) { c.OnMalformed = func() { malformed++ } })
	root := h.fake.NewTS()
	envs := []string{
		h.fake.Send("events_api", h.fake.AssistantThreadContextChanged(ann, "D1", root, "C1")),
		h.fake.Send("events_api", h.fake.AppContextChanged(ann, "D1", "C1")),
	}
	eventually(t, "the acks", func() bool { return h.fake.Acked(envs[0]) && h.fake.Acked(envs[1]) })
	if got := h.rec.got(); len(got) != 0 || malformed != 0 {
		t.Errorf("handed over %+v, %d malformed", got, malformed)
	}
	for _, c := range h.fake.Calls() {
		if c.Method != "auth.test" && c.Method != "apps.connections.open" {
			t.Errorf("a context event made a %s call", c.Method)
		}
	}
}

// TestThreadStatusRotatesLoadingMessages proves the "is thinking…" status is set with loading
// messages for Slack to rotate through (assistant.threads.setStatus's loading_messages, a JSON
// array): DefaultLoadingMessages unless configured, at most MaxLoadingMessages, none when
// configured empty, and none with the clear.
func TestThreadStatusRotatesLoadingMessages(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = "step " + string(rune('a'+i)) + ", with a comma"
	}
	for _, tc := range []struct {
		name       string
		configured []string
		want       []string
	}{
		{"default", nil, DefaultLoadingMessages},
		{"configured", many, many[:MaxLoadingMessages]},
		{"none", []string{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, func(c *Config) { c.LoadingMessages = tc.configured })
			ctx := context.Background()
			root := h.fake.NewTS()
			to := channels.Target{Conv: dmThread(root), ReplyTo: root}
			if err := h.ch.Typing(ctx, to); err != nil {
				t.Fatal(err)
			}
			if _, err := h.ch.Send(ctx, to, channels.Message{Text: "done"}); err != nil {
				t.Fatal(err)
			}
			st := h.fake.Statuses()
			if len(st) != 2 || st[0].Status != statusText || st[1].Status != "" {
				t.Fatalf("statuses %+v, want set then cleared", st)
			}
			if !slices.Equal(st[0].LoadingMessages, tc.want) || st[1].LoadingMessages != nil {
				t.Errorf("loading messages %q then %q, want %q then none", st[0].LoadingMessages, st[1].LoadingMessages, tc.want)
			}
		})
	}
}

// TestSuggestedPromptsAsSlackShowsThem proves the prompts offered (and declared in the app
// manifest) are the first MaxSuggestedPrompts that are not blank, each titled by itself cut to
// 60 characters.
func TestSuggestedPromptsAsSlackShowsThem(t *testing.T) {
	long := strings.Repeat("é", 70)
	got := SuggestedPrompts([]string{"one", " ", long, "three", "four", "five"})
	want := []Prompt{{"one", "one"}, {strings.Repeat("é", 59) + "…", long}, {"three", "three"}, {"four", "four"}}
	if !slices.Equal(got, want) {
		t.Fatalf("SuggestedPrompts = %q, want %q", got, want)
	}
	if got := SuggestedPrompts(nil); got != nil {
		t.Errorf("no prompts: %q", got)
	}
}
