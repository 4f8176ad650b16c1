package router

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
)

// TestSameEventTwiceOneRun proves inbound dedupe: a platform redelivering one event id queues
// one run, and the second delivery is counted as a dedupe hit.
func TestSameEventTwiceOneRun(t *testing.T) {
	h := newHarness(t)
	conv := dm("c1")
	in := channels.Inbound{EventID: "update:1", Conv: conv, Identity: user("u1"), Text: "hello", Direct: true, MessageID: "10"}
	h.send(in)
	h.send(in)
	if n := h.queued(conv); n != 1 {
		t.Errorf("%d runs queued for one event delivered twice, want 1", n)
	}
	if n := h.metrics.Get("dedupe/test"); n != 1 {
		t.Errorf("dedupe hits = %d, want 1", n)
	}
	in.EventID = "update:2"
	h.send(in)
	if n := h.queued(conv); n != 2 {
		t.Errorf("a new event id queued %d runs in all, want 2", n)
	}
}

// TestDedupeReleasedWhenHandlingFails proves a failed handling releases the event's claim, so
// the platform's redelivery is handled.
func TestDedupeReleasedWhenHandlingFails(t *testing.T) {
	h := newHarness(t)
	conv := dm("c1")
	in := channels.Inbound{EventID: "update:9", Conv: conv, Identity: user("u1"), Text: "hello", Direct: true}
	// A conversation key the thread store refuses makes handling fail after the claim.
	bad := in
	bad.Conv.Chat = strings.Repeat("x", 2000)
	if err := h.router.HandleInbound(h.ctx, h.ch, bad); err == nil {
		t.Fatal("handling an event the store refuses succeeded")
	}
	ok, err := h.store.Claim(h.ctx, eventKey(bad), time.Minute)
	if err != nil || !ok {
		t.Errorf("the failed event's claim was kept (claim again = %v, %v)", ok, err)
	}
}

// TestGatingRules proves when a message reaches the queue: DMs by policy, group messages only
// when they address the bot, continue a thread the bot is in, or answer its pending question.
func TestGatingRules(t *testing.T) {
	h := newHarness(t, func(ro *Options, _ *runs.Options) {
		ro.Access["nodm"] = AccessPolicy{Policy: PolicyOpen, DM: false}
	})
	group := func(chat, thread string) conv.Key {
		return conv.Key{Platform: "test", Workspace: "w", Chat: chat, Thread: thread}
	}
	cases := []struct {
		name      string
		setup     func(conv conv.Key)
		in        channels.Inbound
		wantRuns  int
		wantReply string
	}{
		{name: "DM allowed", in: channels.Inbound{Conv: dm("g1"), Text: "hi", Direct: true, AddressesBot: true}, wantRuns: 1},
		{name: "DM disallowed", in: channels.Inbound{Conv: conv.Key{Platform: "nodm", Chat: "g2"}, Text: "hi", Direct: true, AddressesBot: true},
			wantReply: "don't answer direct messages"},
		{name: "group without mention ignored", in: channels.Inbound{Conv: group("g3", ""), Text: "chatter"}},
		{name: "group mention", in: channels.Inbound{Conv: group("g4", ""), Text: "@bot hi", AddressesBot: true}, wantRuns: 1},
		{name: "reply to the bot", in: channels.Inbound{Conv: group("g5", ""), Text: "and?", AddressesBot: true, ReplyTo: "77"}, wantRuns: 1},
		{name: "thread the bot is in", setup: func(conv conv.Key) {
			h.send(channels.Inbound{Conv: conv, Identity: user("u1"), Text: "@bot start", AddressesBot: true})
		}, in: channels.Inbound{Conv: group("g6", "t1"), Text: "follow-up without mention"}, wantRuns: 2},
		{name: "thread the bot is not in", in: channels.Inbound{Conv: group("g7", "t1"), Text: "no mention"}},
		{name: "pending clarification for this user", setup: func(conv conv.Key) {
			putQuestion(t, h, conv, "u1", runs.Form{Question: "How many?", AllowFreeText: true})
		}, in: channels.Inbound{Conv: group("g8", ""), Text: "four"}, wantRuns: 1},
		{name: "pending clarification for someone else", setup: func(conv conv.Key) {
			putQuestion(t, h, conv, "u2", runs.Form{Question: "How many?", AllowFreeText: true})
		}, in: channels.Inbound{Conv: group("g9", ""), Text: "four"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(tc.in.Conv)
			}
			before := len(h.ch.Sent())
			tc.in.Identity = user("u1")
			h.send(tc.in)
			if n := h.queued(tc.in.Conv); n != tc.wantRuns {
				t.Errorf("%d runs queued, want %d", n, tc.wantRuns)
			}
			sent := h.ch.Sent()[before:]
			switch {
			case tc.wantReply == "" && len(sent) > 0:
				t.Errorf("unexpected reply %q", sent[0].Text)
			case tc.wantReply != "" && (len(sent) != 1 || !strings.Contains(sent[0].Text, tc.wantReply)):
				t.Errorf("replies %+v, want one containing %q", sent, tc.wantReply)
			}
		})
	}
	if n := h.metrics.Get("refused/test/not_addressed"); n != 3 {
		t.Errorf("not_addressed refusals counted %d, want 3", n)
	}
}

// putQuestion stores a pending clarification the way the lead does and returns its id.
func putQuestion(t *testing.T, h *harness, conv conv.Key, allowed string, form runs.Form) string {
	t.Helper()
	runID := runs.NewRunID()
	raw, err := json.Marshal(map[string]any{"form": form, "call_id": "call-1", "events": []any{}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := h.store.Clars().Put(h.ctx, threads.Clarification{
		ID: "q" + runID, ConvKey: conv.String(), RunID: runID, AllowedUserID: allowed, Form: raw,
		ExpiresAt: h.clock.Now().Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// TestBotLoopProtection proves messages from bots (the bot itself included) never run and
// never get a reply, whatever they say.
func TestBotLoopProtection(t *testing.T) {
	h := newHarness(t)
	conv := dm("b1")
	for _, text := range []string{"hello", "/help", "/stats", strings.Repeat("x", 10000)} {
		h.send(channels.Inbound{EventID: "e-" + text[:1], Conv: conv, Identity: user("bot-self"), Text: text, Direct: true, AddressesBot: true, FromBot: true})
	}
	if n := h.queued(conv); n != 0 {
		t.Errorf("%d runs queued from bot messages", n)
	}
	if s := h.ch.Sent(); len(s) != 0 {
		t.Errorf("the bot replied to a bot: %q", s[0].Text)
	}
	if n := h.metrics.Get("refused/test/bot"); n != 4 {
		t.Errorf("bot refusals counted %d, want 4", n)
	}
}

// TestAllowlistAndAdmins proves the allowlist policy: listed users and admins get through,
// others are refused (told privately in a DM, silently but counted in a group), and runtime
// allow/deny overrides the configured list.
func TestAllowlistAndAdmins(t *testing.T) {
	h := newHarness(t, func(ro *Options, _ *runs.Options) {
		ro.Access["test"] = AccessPolicy{Policy: PolicyAllowlist, Allow: []string{"listed"}, DM: false}
	})
	cases := []struct {
		name      string
		user      string
		direct    bool
		before    func()
		wantRuns  int
		wantReply string
	}{
		{name: "listed user in a group", user: "listed", wantRuns: 1},
		{name: "unlisted user in a group", user: "stranger"},
		{name: "unlisted user in a DM is told their id", user: "stranger", direct: true, wantReply: "stranger"},
		{name: "admin though unlisted, DM too", user: "admin1", direct: true, wantRuns: 1},
		{name: "runtime allow", user: "late", before: func() {
			if err := h.store.AllowUser(h.ctx, "test", "late"); err != nil {
				t.Fatal(err)
			}
		}, wantRuns: 1},
		{name: "runtime deny beats the list", user: "listed2", before: func() {
			h.router.opt.Access["test"] = AccessPolicy{Policy: PolicyAllowlist, Allow: []string{"listed", "listed2"}}
			if err := h.store.DenyUser(h.ctx, "test", "listed2"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "admin cannot be denied", user: "admin1", before: func() {
			if err := h.store.DenyUser(h.ctx, "test", "admin1"); err != nil {
				t.Fatal(err)
			}
		}, wantRuns: 1},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			conv := conv.Key{Platform: "test", Chat: "a" + string(rune('a'+i))}
			before := len(h.ch.Sent())
			h.send(channels.Inbound{Conv: conv, Identity: user(tc.user), Text: "hi", Direct: tc.direct, AddressesBot: true})
			if n := h.queued(conv); n != tc.wantRuns {
				t.Errorf("%d runs queued, want %d", n, tc.wantRuns)
			}
			sent := h.ch.Sent()[before:]
			if tc.wantReply == "" && len(sent) > 0 {
				t.Errorf("unexpected reply %q", sent[0].Text)
			}
			if tc.wantReply != "" && (len(sent) != 1 || !strings.Contains(sent[0].Text, tc.wantReply)) {
				t.Errorf("replies %+v, want one containing %q", sent, tc.wantReply)
			}
		})
	}
	if n := h.metrics.Get("refused/test/not_allowed"); n != 3 {
		t.Errorf("not_allowed refusals counted %d, want 3", n)
	}
}

// TestRefusedNativeCommandIsToldPrivately: a native command (a Slack or Discord slash command,
// whose replies the platform shows only to its user) from a user the allowlist refuses gets the
// "not allowed" reply even in a group, where a refused message gets none.
func TestRefusedNativeCommandIsToldPrivately(t *testing.T) {
	h := newHarness(t, func(ro *Options, _ *runs.Options) {
		ro.Access["test"] = AccessPolicy{Policy: PolicyAllowlist, Allow: []string{"listed"}}
	})
	group := conv.Key{Platform: "test", Workspace: "w", Chat: "g1"}
	h.send(channels.Inbound{Conv: group, Identity: user("stranger"), Text: "hi", AddressesBot: true})
	if s := h.ch.Sent(); len(s) != 0 {
		t.Fatalf("a refused group message got %q", s[0].Text)
	}
	h.send(channels.Inbound{Conv: group, Identity: user("stranger"), Command: "help", Text: "/help", MessageID: "interaction:9"})
	s := h.ch.Sent()
	if len(s) != 1 || !strings.Contains(s[0].Text, "not allowed") || !strings.Contains(s[0].Text, "stranger") || s[0].To.ReplyTo != "interaction:9" {
		t.Errorf("replies %+v, want the not-allowed notice as the command's reply", s)
	}
}

// TestAdminFlagDecidedByRouter proves the envelope's Admin comes from configuration, not from
// the adapter, and the envelope is signed.
func TestAdminFlagDecidedByRouter(t *testing.T) {
	h := newHarness(t)
	h.startPool()
	forged := user("u1")
	forged.Admin = true
	h.send(channels.Inbound{Conv: dm("f1"), Identity: forged, Text: "hi", Direct: true})
	h.send(channels.Inbound{Conv: dm("f2"), Identity: user("admin1"), Text: "hi", Direct: true})
	// The platform vouched for u2's permission (Discord's member permissions on a command).
	h.send(channels.Inbound{Conv: dm("f3"), Identity: user("u2"), Text: "hi", Direct: true, PlatformAdmin: true})
	got := map[string]bool{}
	for range 3 {
		env := h.nextRun()
		if err := h.signer.Verify(env); err != nil {
			t.Errorf("run %s: %v", env.RunID, err)
		}
		got[env.Identity.ChannelUserID] = env.Identity.Admin
	}
	if got["u1"] || !got["admin1"] || !got["u2"] {
		t.Errorf("admin flags %v, want u1 false, admin1 and u2 (PlatformAdmin) true", got)
	}
}

// TestDirectCarriedSigned: whether a message came in a private chat travels in the signed
// envelope (profiles route on it), as the adapter reported it.
func TestDirectCarriedSigned(t *testing.T) {
	h := newHarness(t)
	h.startPool()
	h.send(channels.Inbound{Conv: dm("d1"), Identity: user("u1"), Text: "hi", Direct: true})
	h.send(channels.Inbound{Conv: dm("d2"), Identity: user("u2"), Text: "hi", AddressesBot: true})
	got := map[string]bool{}
	for range 2 {
		env := h.nextRun()
		if err := h.signer.Verify(env); err != nil {
			t.Errorf("run %s: %v", env.RunID, err)
		}
		got[env.Conv.Chat] = env.Direct
	}
	if !got["d1"] || got["d2"] {
		t.Errorf("direct flags %v, want d1 true and d2 false", got)
	}
}

// TestOversizedMessageRefusedPolitely proves a message over MaxMessageChars gets a polite reply
// and queues nothing.
func TestOversizedMessageRefusedPolitely(t *testing.T) {
	h := newHarness(t, func(ro *Options, _ *runs.Options) { ro.MaxMessageChars = 100 })
	conv := dm("o1")
	h.send(channels.Inbound{Conv: conv, Identity: user("u1"), Text: strings.Repeat("é", 101), Direct: true, MessageID: "5"})
	h.send(channels.Inbound{Conv: conv, Identity: user("u1"), Text: strings.Repeat("é", 100), Direct: true})
	if n := h.queued(conv); n != 1 {
		t.Errorf("%d runs queued, want only the message at the limit", n)
	}
	s := h.ch.Sent()
	if len(s) != 1 || !strings.Contains(s[0].Text, "too long") || !strings.Contains(s[0].Text, "101") || s[0].To.ReplyTo != "5" {
		t.Errorf("replies %+v, want one polite refusal replying to message 5", s)
	}
}

// TestBusyBecomesPoliteReply proves backpressure and pause turn into polite replies, with
// nothing queued.
func TestBusyBecomesPoliteReply(t *testing.T) {
	h := newHarness(t, func(_ *Options, qo *runs.Options) { qo.MaxPerConversation = 1 })
	conv := dm("busy")
	h.send(channels.Inbound{Conv: conv, Identity: user("u1"), Text: "first", Direct: true})
	h.send(channels.Inbound{Conv: conv, Identity: user("u1"), Text: "second", Direct: true})
	if n := h.queued(conv); n != 1 {
		t.Errorf("%d runs queued, want 1", n)
	}
	if got := h.ch.LastSent(); got != msgBusy {
		t.Errorf("reply %q, want %q", got, msgBusy)
	}
	if err := h.queue.Pause(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.send(channels.Inbound{Conv: dm("other"), Identity: user("u1"), Text: "third", Direct: true})
	if got := h.ch.LastSent(); got != msgPaused {
		t.Errorf("reply %q, want %q", got, msgPaused)
	}
	if h.metrics.Get("refused/test/busy") != 1 || h.metrics.Get("refused/test/paused") != 1 {
		t.Errorf("busy/paused not counted: %v", h.metrics)
	}
}

// TestWorkingSignalAtReceipt proves the "working" signal goes out when a message is accepted,
// before any worker has started the run (the run may wait behind others in the conversation).
func TestWorkingSignalAtReceipt(t *testing.T) {
	h := newHarness(t)
	conv := dm("c1")
	h.send(channels.Inbound{EventID: "update:1", Conv: conv, Identity: user("u1"), Text: "hello", Direct: true, MessageID: "10"})
	h.ch.Mu.Lock()
	typing := h.ch.Typings
	h.ch.Mu.Unlock()
	if typing != 1 || h.queued(conv) != 1 {
		t.Fatalf("typing signals = %d, runs queued = %d; want 1 and 1", typing, h.queued(conv))
	}
}

// TestRunRemembersTheMessageItAnswers proves delivery can reply to the message a run answers:
// the queued run's envelope carries it (run events repeat it to delivery), for a message
// addressed to the bot and for a follow-up in a thread the bot is in.
func TestRunRemembersTheMessageItAnswers(t *testing.T) {
	h := newHarness(t)
	h.startPool()
	thread := conv.Key{Platform: "test", Chat: "g1", Thread: "t1"}
	cases := []struct {
		name string
		in   channels.Inbound
	}{
		{"direct message", channels.Inbound{EventID: "e1", Conv: dm("c1"), Identity: user("u1"), Text: "hi", Direct: true, MessageID: "101"}},
		{"mention in a thread", channels.Inbound{EventID: "e2", Conv: thread, Identity: user("u1"), Text: "@bot hi", AddressesBot: true, MessageID: "102"}},
		{"follow-up in the thread", channels.Inbound{EventID: "e3", Conv: thread, Identity: user("u2"), Text: "and then?", MessageID: "103"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.send(tc.in)
			env := h.nextRun()
			if env.ReplyTo != tc.in.MessageID {
				t.Fatalf("run answers %q, want %q", env.ReplyTo, tc.in.MessageID)
			}
		})
	}
}
