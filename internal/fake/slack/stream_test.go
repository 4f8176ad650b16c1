package slackfake_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/conformance"

	"github.com/slack-go/slack"

	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// TestStreamingChunks proves the fake keeps what slack-go's chunk types stream: markdown_text
// chunks in the text, task_update chunks merged by id, the plan's title, the display mode.
func TestStreamingChunks(t *testing.T) {
	s := slackfake.New(t)
	api := client(s)
	ctx := context.Background()
	root := s.NewTS()
	task := slack.NewTaskUpdateChunk("t1", "Flights")
	task.Status = slack.TaskCardStatusInProgress
	_, ts, err := api.StartStreamContext(ctx, "D1", slack.MsgOptionTS(root), slack.MsgOptionTaskDisplayMode(slack.TaskDisplayModePlan),
		slack.MsgOptionChunks(slack.NewPlanUpdateChunk("Working"), task, slack.NewMarkdownTextChunk("Hello ")))
	if err != nil {
		t.Fatalf("chat.startStream: %v", err)
	}
	task.Status, task.Output = slack.TaskCardStatusComplete, "two found"
	if _, _, err := api.AppendStreamContext(ctx, "D1", ts, slack.MsgOptionChunks(task, slack.NewMarkdownTextChunk("world"))); err != nil {
		t.Fatalf("chat.appendStream: %v", err)
	}
	if _, _, err := api.StopStreamContext(ctx, "D1", ts, slack.MsgOptionChunks(slack.NewPlanUpdateChunk("Done")), slack.MsgOptionMarkdownText(".")); err != nil {
		t.Fatalf("chat.stopStream: %v", err)
	}
	p := s.Posted("D1")
	if len(p) != 1 || p[0].Markdown != "Hello world." || p[0].Plan != "Done" || p[0].DisplayMode != "plan" {
		t.Fatalf("streamed %+v", p)
	}
	if len(p[0].Tasks) != 1 || p[0].Tasks[0].Status != "complete" || p[0].Tasks[0].Output != "two found" || len(p[0].TaskUpdates) != 2 {
		t.Fatalf("tasks %+v, updates %+v", p[0].Tasks, p[0].TaskUpdates)
	}
	// chat.update replaces the message, streamed content included.
	if _, _, _, err := api.UpdateMessageContext(ctx, "D1", ts, slack.MsgOptionText("replaced", false)); err != nil {
		t.Fatal(err)
	}
	if p := s.Posted("D1"); p[0].Markdown != "" || len(p[0].Tasks) != 0 || p[0].Text != "replaced" {
		t.Fatalf("after chat.update %+v", p[0])
	}
}

// TestStreamingRefusals proves the fake answers malformed streaming calls and streams Slack
// ended as Slack does.
func TestStreamingRefusals(t *testing.T) {
	s := slackfake.New(t)
	conformance.ExpectViolations(t, s) // refused bodies, sent on purpose
	api := client(s)
	ctx := context.Background()
	root := s.NewTS()
	long := strings.Repeat("x", slackfake.MaxStreamText+1)
	bad := []struct {
		name string
		opts []slack.MsgOption
		want string
	}{
		{"text too long", []slack.MsgOption{slack.MsgOptionMarkdownText(long)}, "msg_too_long"},
		{"chunk text too long", []slack.MsgOption{slack.MsgOptionChunks(slack.NewMarkdownTextChunk(long))}, "msg_too_long"},
		{"task without status", []slack.MsgOption{slack.MsgOptionChunks(slack.NewTaskUpdateChunk("t", "T"))}, "invalid_chunks"},
		{"task without title", []slack.MsgOption{slack.MsgOptionChunks(slack.TaskUpdateChunk{Type: slack.StreamChunkTaskUpdate, ID: "t", Status: slack.TaskCardStatusPending})}, "invalid_chunks"},
		{"task output too long", []slack.MsgOption{slack.MsgOptionChunks(slack.TaskUpdateChunk{Type: slack.StreamChunkTaskUpdate, ID: "t", Title: "T", Status: slack.TaskCardStatusComplete, Output: strings.Repeat("o", 257)})}, "invalid_chunks"},
		{"plan without title", []slack.MsgOption{slack.MsgOptionChunks(slack.NewPlanUpdateChunk(""))}, "invalid_chunks"},
		{"bad display mode", []slack.MsgOption{slack.MsgOptionTaskDisplayMode("grid")}, "invalid_arguments"},
		{"no thread", nil, "invalid_arguments"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			if tc.name != "no thread" {
				opts = append([]slack.MsgOption{slack.MsgOptionTS(root)}, opts...)
			}
			if _, _, err := api.StartStreamContext(ctx, "D1", opts...); err == nil || err.Error() != tc.want {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
	s.ExpireStreamsAfter(1)
	_, ts, err := api.StartStreamContext(ctx, "D1", slack.MsgOptionTS(root), slack.MsgOptionMarkdownText("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.AppendStreamContext(ctx, "D1", ts, slack.MsgOptionMarkdownText("b")); err != nil {
		t.Fatalf("first append: %v", err)
	}
	for _, call := range []func() error{
		func() error {
			_, _, err := api.AppendStreamContext(ctx, "D1", ts, slack.MsgOptionMarkdownText("c"))
			return err
		},
		func() error { _, _, err := api.StopStreamContext(ctx, "D1", ts); return err },
	} {
		if err := call(); err == nil || err.Error() != "message_not_in_streaming_state" {
			t.Fatalf("a call on an expired stream: %v", err)
		}
	}
	if p := s.Posted("D1"); p[len(p)-1].Markdown != "ab" {
		t.Fatalf("expired stream shows %q", p[len(p)-1].Markdown)
	}
}
