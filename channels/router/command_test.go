package router

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// TestEveryCommand runs every command as text and as a native command, checks its reply and
// its effect, and proves admin commands refuse non-admins (who are logged and counted).
func TestEveryCommand(t *testing.T) {
	h := newHarness(t)
	conv := dm("cmd")
	ctx := h.ctx
	// Something for cancel, status and stats to see: two queued runs.
	h.send(channels.Inbound{Conv: conv, Identity: user("u1"), Text: "one", Direct: true})
	h.send(channels.Inbound{Conv: conv, Identity: user("u1"), Text: "two", Direct: true})
	cases := []struct {
		name    string
		user    string
		text    string // a text command; or native when cmd is set
		cmd     string
		args    []string
		want    []string
		check   func(t *testing.T)
		counted string
	}{
		{name: "help", user: "u1", text: "/help", want: []string{"/new", "/whoami"}, check: func(t *testing.T) {
			if strings.Contains(h.ch.LastSent(), "/stats") {
				t.Error("help shows admin commands to a non-admin")
			}
		}},
		{name: "help for an admin", user: "admin1", text: "/help", want: []string{"/stats", "/deadletters"}},
		{name: "status", user: "u1", text: "/status", want: []string{"2 runs queued"}},
		{name: "whoami", user: "u1", text: "/whoami", want: []string{"`u1`", "test", "not an admin"}},
		{name: "whoami native", user: "admin1", cmd: "whoami", want: []string{"`admin1`", "an admin"}},
		{name: "cancel", user: "u1", text: "/cancel", want: []string{"Cancelled 2 requests"}, check: func(t *testing.T) {
			if n := h.queued(conv); n != 0 {
				t.Errorf("%d runs still queued after cancel", n)
			}
		}},
		{name: "cancel again", user: "u1", text: "/cancel@switchboard_bot", want: []string{"Nothing to cancel"}},
		{name: "new", user: "u1", text: "/new", want: []string{"new conversation"}, check: func(t *testing.T) {
			if _, err := h.store.Get(ctx, conv.String()); err != nil {
				t.Errorf("no thread after /new: %v", err)
			}
		}},
		{name: "allow refused for a non-admin", user: "u1", text: "/allow u9", want: []string{"admins only"}, counted: "refused/test/admin_only"},
		{name: "allow", user: "admin1", text: "/allow u9", want: []string{"Allowed `u9`"}, check: func(t *testing.T) {
			if a, _, _ := h.store.AccessOverride(ctx, "test", "u9"); !a {
				t.Error("u9 not allowed")
			}
		}},
		{name: "allow without a user", user: "admin1", text: "/allow", want: []string{"Usage: /allow"}},
		{name: "deny", user: "admin1", cmd: "deny", args: []string{"u9"}, want: []string{"Denied `u9`"}, check: func(t *testing.T) {
			if _, d, _ := h.store.AccessOverride(ctx, "test", "u9"); !d {
				t.Error("u9 not denied")
			}
		}},
		{name: "admins", user: "admin1", text: "/admins", want: []string{"`admin1`"}},
		{name: "stats refused for a non-admin", user: "u1", text: "/stats", want: []string{"admins only"}},
		{name: "stats", user: "admin1", text: "/stats", want: []string{"Queue:", "workers in this process: 2", "cancelled", "Dead letters: 0", "Last minute: 0 answered, 0 failed", "last hour: 0 answered"}},
		{name: "deadletters", user: "admin1", text: "/deadletters", want: []string{"No dead letters"}},
		{name: "deadletters replay unknown", user: "admin1", text: "/deadletters replay 01ABC", want: []string{"No dead letter has run id `01ABC`"}},
		{name: "deadletters drop unknown", user: "admin1", text: "/deadletters drop 01ABC", want: []string{"No dead letter"}},
		{name: "deadletters bad usage", user: "admin1", text: "/deadletters explode", want: []string{"Usage: /deadletters"}},
		{name: "pause", user: "admin1", text: "/pause", want: []string{"Paused"}, check: func(t *testing.T) {
			if p, _ := h.queue.Paused(ctx); !p {
				t.Error("not paused")
			}
		}},
		{name: "status while paused", user: "u1", text: "/status", want: []string{"Idle", "paused"}},
		{name: "resume", user: "admin1", text: "/resume", want: []string{"Resumed"}, check: func(t *testing.T) {
			if p, _ := h.queue.Paused(ctx); p {
				t.Error("still paused")
			}
		}},
		{name: "pause refused for a non-admin", user: "u1", cmd: "pause", want: []string{"admins only"}, check: func(t *testing.T) {
			if p, _ := h.queue.Paused(ctx); p {
				t.Error("a non-admin paused the bot")
			}
		}},
		{name: "model shows the default", user: "admin1", text: "/model", want: []string{"default model"}},
		{name: "model sets", user: "admin1", text: "/model deepseek-reasoner", want: []string{"now uses the model `deepseek-reasoner`"}, check: func(t *testing.T) {
			s, err := h.store.GetSettings(ctx, conv.String())
			if err != nil || s.Model != "deepseek-reasoner" {
				t.Errorf("settings %+v, %v", s, err)
			}
		}},
		{name: "model shows the chat's model", user: "admin1", text: "/model", want: []string{"`deepseek-reasoner`"}},
		{name: "model rejects junk", user: "admin1", text: "/model a b", want: []string{"Usage: /model"}},
		{name: "model refused for a non-admin", user: "u1", text: "/model x", want: []string{"admins only"}},
		{name: "unknown command", user: "u1", text: "/frobnicate", want: []string{"don't know the command /frobnicate"}, counted: "refused/test/unknown_command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.ch.Sent())
			h.send(channels.Inbound{Conv: conv, Identity: user(tc.user), Text: tc.text, Command: tc.cmd, Args: tc.args, Direct: true})
			sent := h.ch.Sent()[before:]
			if len(sent) != 1 {
				t.Fatalf("%d replies, want 1", len(sent))
			}
			for _, w := range tc.want {
				if !strings.Contains(sent[0].Text, w) {
					t.Errorf("reply %q does not contain %q", sent[0].Text, w)
				}
			}
			if sent[0].Msg.Card != nil {
				t.Error("command replies are text, got a card")
			}
			if tc.check != nil {
				tc.check(t)
			}
			if tc.counted != "" && h.metrics.Get(tc.counted) == 0 {
				t.Errorf("%s not counted", tc.counted)
			}
		})
	}
	if n := h.metrics.Get("refused/test/admin_only"); n != 4 {
		t.Errorf("admin refusals counted %d, want 4", n)
	}
	if n := h.queued(conv); n != 0 {
		t.Errorf("commands queued %d runs; they reply directly", n)
	}
}

// TestStatsShowsRecentThroughput proves /stats shows the runs finished in the last minute and the
// last hour, answered and failed, next to the totals.
func TestStatsShowsRecentThroughput(t *testing.T) {
	h := newRedisHarness(t)
	h.runPool(runs.HandlerFunc(func(ctx context.Context, r *runs.Run) (runs.Outcome, error) {
		if r.Envelope.Text == "fail" {
			return "", runs.Permanent(errors.New("refused"))
		}
		return runs.OutcomeAnswered, nil
	}), nil)
	for i, text := range []string{"one", "two", "fail"} {
		h.send(channels.Inbound{Conv: dm(fmt.Sprint("tput", i)), Identity: user("u1"), Text: text, Direct: true})
	}
	want := runs.Throughput{Answered: 2, Failed: 1}
	waitFor(t, "three finished runs in both windows", func() bool {
		r, err := h.queue.Recent(h.ctx)
		return err == nil && r.LastMinute == want && r.LastHour == want
	})
	before := len(h.ch.Sent())
	h.send(channels.Inbound{Conv: dm("admin"), Identity: user("admin1"), Text: "/stats", Direct: true})
	sent := h.ch.Sent()[before:]
	if len(sent) != 1 {
		t.Fatalf("%d replies, want 1", len(sent))
	}
	line := "Last minute: 2 answered, 1 failed, 0 dead-lettered · last hour: 2 answered, 1 failed, 0 dead-lettered"
	if !strings.Contains(sent[0].Text, line) {
		t.Errorf("/stats = %q, want the line %q", sent[0].Text, line)
	}
}

// TestNewCancelsPendingQuestion proves /new withdraws a pending clarification: a later reply
// is an ordinary message, not an answer.
func TestNewCancelsPendingQuestion(t *testing.T) {
	h := newHarness(t)
	h.startPool()
	conv := dm("n1")
	putQuestion(t, h, conv, "u1", runs.Form{Question: "Which?", AllowFreeText: true})
	h.send(channels.Inbound{Conv: conv, Identity: user("u1"), Text: "/new", Direct: true})
	h.send(channels.Inbound{Conv: conv, Identity: user("u1"), Text: "something else", Direct: true})
	if env := h.nextRun(); env.Kind != runs.KindMessage {
		t.Errorf("after /new the reply ran as %s, want a message", env.Kind)
	}
}

// TestCommandsListed proves Commands covers every command once and can be registered.
func TestCommandsListed(t *testing.T) {
	want := []string{"help", "new", "cancel", "status", "whoami", "allow", "deny", "admins", "stats", "deadletters", "pause", "resume", "model", "profile", "tools"}
	got := channels.Commands()
	if len(got) != len(want) {
		t.Fatalf("%d commands, want %d", len(got), len(want))
	}
	for i, c := range got {
		if c.Name != want[i] || c.Description == "" {
			t.Errorf("command %d = %+v, want %s with a description", i, c, want[i])
		}
	}
	got[0].Name = "mutated"
	if channels.Commands()[0].Name != "help" {
		t.Error("Commands returned shared state")
	}
	f := newFakeChannel("test")
	if err := f.RegisterCommands(context.Background(), channels.Commands()); err != nil || len(f.Commands) != len(want) {
		t.Errorf("registering: %v", err)
	}
}

// TestStartGreetsNewUsers proves the commands a client sends on its own (Telegram's /start when
// someone opens the bot, /settings) are answered with a greeting that says what the bot does and
// how to ask it — write in a direct chat, mention it in a group — instead of "I don't know the
// command"; /help opens with the same greeting and still lists the commands; none of them runs.
func TestStartGreetsNewUsers(t *testing.T) {
	h := newHarness(t)
	group := conv.Key{Platform: "test", Chat: "-100group"}
	cases := []struct {
		name    string
		in      channels.Inbound
		want    []string
		notWant []string
	}{
		{name: "start in a direct chat", in: channels.Inbound{Conv: dm("greet"), Text: "/start", Direct: true},
			want: []string{"Hi!", "just write", "/help"}, notWant: []string{"don't know", "mention me"}},
		{name: "start with the bot's name in a group", in: channels.Inbound{Conv: group, Text: "/start@switchboard_bot", AddressesBot: true},
			want: []string{"Hi!", "mention me"}, notWant: []string{"don't know", "just write"}},
		{name: "native start", in: channels.Inbound{Conv: dm("greet"), Command: "/start", Direct: true},
			want: []string{"Hi!", "just write"}},
		{name: "settings", in: channels.Inbound{Conv: dm("greet"), Text: "/settings", Direct: true},
			want: []string{"Hi!", "/help"}, notWant: []string{"don't know"}},
		{name: "help opens with the greeting", in: channels.Inbound{Conv: dm("greet"), Text: "/help", Direct: true},
			want: []string{"Hi!", "just write", "Commands:", "/new", "/cancel"}},
		{name: "help in a group", in: channels.Inbound{Conv: group, Text: "/help", AddressesBot: true},
			want: []string{"mention me", "Commands:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.ch.Sent())
			tc.in.Identity = user("newcomer")
			h.send(tc.in)
			sent := h.ch.Sent()[before:]
			if len(sent) != 1 {
				t.Fatalf("%d replies, want 1", len(sent))
			}
			text := sent[0].Text
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("reply %q does not contain %q", text, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(text, w) {
					t.Errorf("reply %q contains %q", text, w)
				}
			}
			if first, _, _ := strings.Cut(text, "\n"); !strings.HasPrefix(first, "Hi!") {
				t.Errorf("the reply does not open with the greeting line: %q", first)
			}
		})
	}
	if n := h.metrics.Get("refused/test/unknown_command"); n != 0 {
		t.Errorf("%d greetings counted as unknown commands", n)
	}
	if n := h.metrics.Get("command/test/start"); n != 3 {
		t.Errorf("/start counted %d times, want 3", n)
	}
	for _, c := range []conv.Key{dm("greet"), group} {
		if n := h.queued(c); n != 0 {
			t.Errorf("%s: %d runs queued; greetings are answered by the router", c, n)
		}
	}
	for _, c := range channels.Commands() {
		if greetingCommands[c.Name] {
			t.Errorf("/%s is in the command menu; the client sends it on its own", c.Name)
		}
	}
}

// places is a Places for the tests: one profile for every chat, allowing two models.
type places struct{ models []string }

func (p places) Place(k conv.Key, direct bool, user string) string {
	return fmt.Sprintf("profile support for %s (direct %v, user %s)", k.Chat, direct, user)
}
func (p places) Models(conv.Key, bool, string) []string { return p.models }

// TestProfileCommandAndModelBounds: /profile tells an admin the chat's profile and why; /model
// chooses only among the profile's models, and /profile without profiles says so.
func TestProfileCommandAndModelBounds(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *runs.Options) {
		o.Admins = map[string][]string{"test": {"admin1"}}
		o.Places = places{models: []string{"small", "large"}}
	})
	c := dm("p1")
	for _, tc := range []struct{ user, text, want string }{
		{"admin1", "/profile", "profile support for p1 (direct true, user admin1)"},
		{"u1", "/profile", "admins only"},
		{"admin1", "/model huge", "allows only these models: `small`, `large`"},
		{"admin1", "/model large", "now uses the model `large`"},
	} {
		before := len(h.ch.Sent())
		h.send(channels.Inbound{Conv: c, Identity: user(tc.user), Text: tc.text, Direct: true})
		sent := h.ch.Sent()[before:]
		if len(sent) != 1 || !strings.Contains(sent[0].Text, tc.want) {
			t.Errorf("%s by %s: replies %+v, want one containing %q", tc.text, tc.user, sent, tc.want)
		}
	}
	none := newHarness(t, func(o *Options, _ *runs.Options) { o.Admins = map[string][]string{"test": {"admin1"}} })
	none.send(channels.Inbound{Conv: c, Identity: user("admin1"), Text: "/profile", Direct: true})
	if s := none.ch.Sent(); len(s) != 1 || !strings.Contains(s[0].Text, "No profiles are configured") {
		t.Errorf("/profile without profiles: %+v", s)
	}
}
