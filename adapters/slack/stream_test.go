package slack

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

func dmThread(thread string) conv.Key {
	return conv.Key{Platform: "slack", Workspace: slackfake.TeamID, Chat: "D1", Thread: thread}
}

// TestStreamWithTasks proves an answer streams in the thread through slack-go — the plan, each
// subagent a task started then completed with its output, the text in order — and that the
// stop clears the thread's status.
func TestStreamWithTasks(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	root := h.fake.NewTS()
	to := channels.Target{Conv: dmThread(root), ReplyTo: root, User: slackfake.TeamID + ":U0ANN"}
	if !h.ch.CanStream(to) {
		t.Fatal("a DM thread must stream")
	}
	if err := h.ch.Typing(ctx, to); err != nil {
		t.Fatal(err)
	}
	ref, err := h.ch.StartStream(ctx, to, channels.StreamUpdate{Plan: "Working", Tasks: []channels.StreamTask{{ID: "a1", Title: "Flights", Status: channels.TaskRunning}}})
	if err != nil {
		t.Fatalf("StartStream: %v", err)
	}
	if err := h.ch.AppendStream(ctx, ref, channels.StreamUpdate{Text: "Hello "}); err != nil {
		t.Fatalf("AppendStream: %v", err)
	}
	done := channels.StreamTask{ID: "a1", Title: "Flights", Status: channels.TaskDone, Output: "two found"}
	if err := h.ch.StopStream(ctx, ref, channels.StreamUpdate{Text: "world.", Plan: "Done", Tasks: []channels.StreamTask{done}}); err != nil {
		t.Fatalf("StopStream: %v", err)
	}
	p := h.fake.Posted("D1")
	if len(p) != 1 || p[0].ThreadTS != root || p[0].Markdown != "Hello world." || p[0].Streaming || p[0].Plan != "Done" || p[0].DisplayMode != "plan" {
		t.Fatalf("streamed %+v", p)
	}
	if len(p[0].TaskUpdates) != 2 || p[0].TaskUpdates[0].Status != "in_progress" || p[0].Tasks[0].Status != "complete" || p[0].Tasks[0].Output != "two found" {
		t.Fatalf("tasks %+v", p[0].TaskUpdates)
	}
	st := h.fake.Statuses()
	if len(st) != 2 || st[0].Status == "" || st[1].Status != "" {
		t.Fatalf("statuses %+v: set while working, cleared at the stop", st)
	}
}

// TestStreamInChannelNamesTheRecipient proves a stream in a channel thread goes to the user
// answered (recipient team and user), and that without one it is refused before any call.
func TestStreamInChannelNamesTheRecipient(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	root := h.fake.NewTS()
	k := conv.Key{Platform: "slack", Workspace: "E0ORG/" + slackfake.TeamID, Chat: "C1", Thread: root}
	if _, err := h.ch.StartStream(ctx, channels.Target{Conv: k}, channels.StreamUpdate{Text: "x"}); !errors.Is(err, channels.ErrStreamRefused) {
		t.Fatalf("no recipient: %v", err)
	}
	ref, err := h.ch.StartStream(ctx, channels.Target{Conv: k, User: "E0ORG:U0ANN"}, channels.StreamUpdate{Text: "x"})
	if err != nil {
		t.Fatalf("StartStream: %v", err)
	}
	var params map[string]string
	for _, c := range h.fake.Calls() {
		if c.Method == "chat.startStream" {
			params = c.Params
		}
	}
	if params["recipient_team_id"] != slackfake.TeamID || params["recipient_user_id"] != "U0ANN" || ref.ID() == "" {
		t.Fatalf("startStream params %v", params)
	}
}

// TestStreamRefusals proves Slack's refusals wrap channels.ErrStreamRefused — an expired stream
// (message_not_in_streaming_state), an unknown method (after which the channel is not offered
// streaming again) — and that a top-level conversation or slack.streaming off never streams.
func TestStreamRefusals(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	root := h.fake.NewTS()
	to := channels.Target{Conv: dmThread(root)}
	h.fake.ExpireStreamsAfter(1)
	ref, err := h.ch.StartStream(ctx, to, channels.StreamUpdate{Text: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.ch.AppendStream(ctx, ref, channels.StreamUpdate{Text: "b"}); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"append": h.ch.AppendStream(ctx, ref, channels.StreamUpdate{Text: "c"}),
		"stop":   h.ch.StopStream(ctx, ref, channels.StreamUpdate{Text: "c"}),
	} {
		if !errors.Is(err, channels.ErrStreamRefused) || !strings.Contains(err.Error(), "message_not_in_streaming_state") {
			t.Errorf("%s on an expired stream: %v", name, err)
		}
	}
	h.fake.FailNext("chat.startStream", 1, slackfake.Fault{Error: "unknown_method"})
	if _, err := h.ch.StartStream(ctx, to, channels.StreamUpdate{Text: "a"}); !errors.Is(err, channels.ErrStreamRefused) {
		t.Fatalf("unknown_method: %v", err)
	}
	if h.ch.CanStream(to) {
		t.Error("a channel that does not know chat.startStream is offered streaming again")
	}
	if h.ch.CanStream(channels.Target{Conv: dmThread("")}) {
		t.Error("a top-level DM streams: Slack streams thread replies only")
	}
	off, _ := newChannel(t, h.fake, func(c *Config) { c.StreamingOff = true })
	if off.CanStream(channels.Target{Conv: dmThread(h.fake.NewTS())}) {
		t.Error("streaming off still streams")
	}
}

// TestStreamSplitsLongText proves text longer than one call's markdown_text limit is sent in
// several calls, whole and in order, never cut inside a character.
func TestStreamSplitsLongText(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	to := channels.Target{Conv: dmThread(h.fake.NewTS())}
	long := strings.Repeat("é", MaxStreamText) + strings.Repeat("b", 10)
	ref, err := h.ch.StartStream(ctx, to, channels.StreamUpdate{Text: long})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.ch.AppendStream(ctx, ref, channels.StreamUpdate{Text: long}); err != nil {
		t.Fatal(err)
	}
	if err := h.ch.StopStream(ctx, ref, channels.StreamUpdate{Text: long}); err != nil {
		t.Fatal(err)
	}
	p := h.fake.Posted("D1")
	if len(p) != 1 || p[0].Markdown != long+long+long {
		t.Fatalf("streamed %d messages, %d characters", len(p), len([]rune(p[0].Markdown)))
	}
	if got := splitStreamText(""); len(got) != 1 || got[0] != "" {
		t.Fatalf("split of nothing: %q", got)
	}
}

// TestStreamErrorClassification is the table of Slack's answers to a streaming call: which
// make delivery go on by post-and-edit (channels.ErrStreamRefused) and which keep their own
// meaning.
func TestStreamErrorClassification(t *testing.T) {
	for _, tc := range []struct {
		code    string
		refused bool
		other   error
	}{
		{"message_not_in_streaming_state", true, nil},
		{"unknown_method", true, nil},
		{"user_not_found", true, nil},
		{"missing_recipient_user_id", true, nil},
		{"not_an_assistant_thread", true, nil}, // any code of the conversation's own
		{"invalid_chunks", true, nil},
		{"invalid_blocks", true, channels.ErrCardRefused},
		{"channel_not_found", false, channels.ErrUnreachable},
		{"invalid_auth", false, ErrAuth},
		{"message_not_found", false, channels.ErrMessageGone},
	} {
		err := streamError(&APIError{Method: "chat.appendStream", Code: tc.code, kinds: classify(tc.code)})
		if errors.Is(err, channels.ErrStreamRefused) != tc.refused {
			t.Errorf("%s: refused = %v, want %v", tc.code, !tc.refused, tc.refused)
		}
		if tc.other != nil && !errors.Is(err, tc.other) {
			t.Errorf("%s: %v does not keep %v", tc.code, err, tc.other)
		}
	}
	rl := &channels.RateLimitError{}
	if err := streamError(rl); err != rl {
		t.Errorf("a rate limit is not passed on as it is: %v", err)
	}
}

// TestRecipient is the table of the recipients a stream outside a DM goes to.
func TestRecipient(t *testing.T) {
	for _, tc := range []struct{ workspace, user, team, id string }{
		{"T1", "T1:U2", "T1", "U2"},
		{"E1/T1", "E1:U2", "T1", "U2"},
		{"T1", "", "T1", ""},
		{"T1", "U2", "T1", ""}, // not a channel_user_id
		{"", "T1:U2", "", "U2"},
		{"E1/", "E1:U2:", "", ""},
	} {
		team, id := recipient(conv.Key{Platform: "slack", Workspace: tc.workspace, Chat: "C1"}, tc.user)
		if team != tc.team || id != tc.id {
			t.Errorf("recipient(%q, %q) = %q, %q; want %q, %q", tc.workspace, tc.user, team, id, tc.team, tc.id)
		}
	}
}
