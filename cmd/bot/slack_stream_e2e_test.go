package main

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/delivery"
	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// assistantDM is a message in an assistant thread of the DM with Ann, rooted at root.
func assistantDM(root, text string) slackfake.Msg {
	m := dm(text)
	m.ThreadTS = root
	return m
}

// waitStreamed waits until the thread's one bot message is a finished stream showing want.
func (e *slackE2E) waitStreamed(channel, thread, want string) slackfake.Message {
	e.tb.Helper()
	var got []slackfake.Message
	waitFor(e.tb, "a finished stream in "+channel+"/"+thread, 15*time.Second, func() bool {
		got = e.inThread(channel, thread)
		return len(got) == 1 && got[0].Streamed && !got[0].Streaming && strings.Contains(got[0].Markdown, want)
	})
	return got[0]
}

// statusCleared reports whether the thread's last assistant status call cleared it.
func (e *slackE2E) statusCleared(channel, thread string) bool {
	last := "unset"
	for _, s := range e.sl.Statuses() {
		if s.Channel == channel && s.ThreadTS == thread {
			last = s.Status
		}
	}
	return last == ""
}

// teamModel is a lead that delegates two named tasks and then answers in small, slow pieces;
// the subagents answer "result of <task>". The lead thinks a moment before delegating — past
// the placeholder's grace period, within which a stream is not started yet (an answer ready by
// then is posted as one message), and so past the status's wait too: "is thinking…" shows.
func teamModel(answer string) func(modelserver.Request) modelserver.Reply {
	return func(r modelserver.Request) modelserver.Reply {
		if len(r.Messages) == 0 || r.Messages[0].Role != "system" || !strings.Contains(r.Messages[0].Content, "You are Switchboard") {
			return modelserver.Text("result of " + r.LastUserText())
		}
		if r.Messages[len(r.Messages)-1].Role == "tool" {
			return modelserver.Reply{Content: answer, ChunkSize: 6, ChunkDelay: 20 * time.Millisecond}
		}
		calls := modelserver.Calls(
			modelserver.ToolCall{ID: "d1", Name: "delegate", Arguments: `{"task":"alpha","name":"Alpha"}`},
			modelserver.ToolCall{ID: "d2", Name: "delegate", Arguments: `{"task":"beta","name":"Beta"}`},
		)
		calls.Latency = delivery.DefaultPlaceholderAfter + 200*time.Millisecond
		return calls
	}
}

// TestSlackStreamsTheAnswerWithSubagentsAsTasks proves, on the whole path, that a DM in an
// assistant thread is answered by Slack's native streaming: one message, the two subagents as
// tasks of its plan — each started (in_progress) and then done (complete) with its one-line
// result —, the answer's text complete exactly once, no placeholder card, and the "is
// thinking…" status cleared at the end.
func TestSlackStreamsTheAnswerWithSubagentsAsTasks(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, nil)
	const answer = "Alpha and beta both check out, so the plan holds."
	e.model.SetFunc(teamModel(answer))
	e.start()
	root := e.sl.NewTS()
	e.sl.PushMessage(assistantDM(root, "check alpha and beta"))
	m := e.waitStreamed("D0ANN", root, answer)
	if m.Markdown != answer || strings.Count(slackVisible(m), answer) != 1 {
		t.Fatalf("the stream shows %q (visible %q), want the answer once", m.Markdown, slackVisible(m))
	}
	if m.DisplayMode != "plan" || m.Plan == "" {
		t.Errorf("display mode %q, plan %q: the tasks are a plan", m.DisplayMode, m.Plan)
	}
	if len(m.Tasks) != 2 {
		t.Fatalf("tasks %+v, want the two subagents", m.Tasks)
	}
	for _, want := range []struct{ title, output string }{{"Alpha", "result of alpha"}, {"Beta", "result of beta"}} {
		var states []string
		for _, u := range m.TaskUpdates {
			if u.Title == want.title {
				states = append(states, u.Status)
			}
		}
		if len(states) != 2 || states[0] != "in_progress" || states[1] != "complete" {
			t.Errorf("%s went through %v, want [in_progress complete]", want.title, states)
		}
		found := false
		for _, task := range m.Tasks {
			found = found || (task.Title == want.title && task.Status == "complete" && task.Output == want.output)
		}
		if !found {
			t.Errorf("%s is not done with %q: %+v", want.title, want.output, m.Tasks)
		}
	}
	if n := e.sl.Count("chat.postMessage"); n != 0 {
		t.Errorf("%d chat.postMessage calls: the stream is the only message", n)
	}
	waitFor(t, "the status cleared", 5*time.Second, func() bool { return e.statusCleared("D0ANN", root) })
}

// TestSlackStreamRefusedMidAnswerEndsByEdit proves that when Slack stops accepting the stream
// mid-answer (message_not_in_streaming_state on chat.appendStream), the answer still ends
// complete in the same message — edited in place, the streamed text replaced rather than
// repeated — and the status is cleared.
func TestSlackStreamRefusedMidAnswerEndsByEdit(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, nil)
	answer := strings.TrimSpace(strings.Repeat("The stream goes on a while. ", 6)) + " And it ends here."
	e.model.SetFunc(func(r modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Content: answer, ChunkSize: 6, ChunkDelay: 100 * time.Millisecond}
	})
	e.sl.ExpireStreamsAfter(1)
	e.start()
	root := e.sl.NewTS()
	e.sl.PushMessage(assistantDM(root, "tell me a long thing"))
	var m slackfake.Message
	waitFor(t, "the answer edited into the stream's message", 20*time.Second, func() bool {
		got := e.inThread("D0ANN", root)
		if len(got) != 1 {
			return false
		}
		m = got[0]
		return strings.Contains(slackBlockText(m), "And it ends here.")
	})
	if !m.Streamed || m.Edits == 0 {
		t.Fatalf("the answer is not in the stream's message, edited: %+v", m)
	}
	if refused := e.sl.Count("chat.appendStream"); refused < 2 {
		t.Fatalf("%d appends: the refusal did not come mid-answer", refused)
	}
	if m.Markdown != "" || strings.Count(slackBlockText(m), answer) != 1 || strings.Count(slackBlockText(m), "The stream goes on a while.") != 6 {
		t.Fatalf("the message repeats or misses text: markdown %q, blocks %q", m.Markdown, slackBlockText(m))
	}
	if got := e.inThread("D0ANN", root); len(got) != 1 {
		t.Fatalf("%d messages in the thread, want the one", len(got))
	}
	waitFor(t, "the status cleared", 5*time.Second, func() bool { return e.statusCleared("D0ANN", root) })
}

// TestSlackStreamingOffPostsAndEdits proves slack.streaming: false answers an assistant thread
// as before streaming existed: a posted message, no stream call.
func TestSlackStreamingOffPostsAndEdits(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, func(c *config.Config) { c.Slack.Streaming = false })
	e.start()
	root := e.sl.NewTS()
	e.sl.PushMessage(assistantDM(root, "hello"))
	got := e.waitSlackAnswers("D0ANN", root, 1)
	if got[0].Streamed || !strings.Contains(slackVisible(got[0]), "echo: hello") {
		t.Fatalf("answer %+v", got[0])
	}
	for _, m := range []string{"chat.startStream", "chat.appendStream", "chat.stopStream"} {
		if n := e.sl.Count(m); n != 0 {
			t.Errorf("%d %s calls with streaming off", n, m)
		}
	}
}

// TestSlackStreamRefusedAtStartPostsTheAnswer proves a workspace that refuses streaming
// (unknown_method, user_not_found) is answered by post-and-edit: one posted answer, complete,
// and, for unknown_method, no stream asked for again in that channel.
func TestSlackStreamRefusedAtStartPostsTheAnswer(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"unknown_method", "user_not_found"} {
		t.Run(code, func(t *testing.T) {
			e := newSlackE2E(t, nil)
			e.model.SetFunc(echoPastGrace) // a stream is started only past the grace period
			e.sl.FailNext("chat.startStream", 1, slackfake.Fault{Error: code})
			e.start()
			root := e.sl.NewTS()
			e.sl.PushMessage(assistantDM(root, "hello"))
			got := e.waitSlackAnswers("D0ANN", root, 1)
			if got[0].Streamed || strings.Count(slackBlockText(got[0]), "echo: hello") != 1 {
				t.Fatalf("answer %+v", got[0])
			}
			if code != "unknown_method" {
				return
			}
			e.sl.PushMessage(assistantDM(root, "again"))
			waitFor(t, "the second answer", 15*time.Second, func() bool {
				for _, m := range e.inThread("D0ANN", root) {
					if strings.Contains(slackVisible(m), "echo: again") && !slackPlaceholder(m) {
						return true
					}
				}
				return false
			})
			if n := e.sl.Count("chat.startStream"); n != 1 {
				t.Errorf("%d chat.startStream calls: a channel without the method is not asked again", n)
			}
		})
	}
}

// echoPastGrace is echoModel answering after the placeholder's grace period: within it a run's
// answer is kept rather than streamed, so that a quick one is posted as one message.
func echoPastGrace(r modelserver.Request) modelserver.Reply {
	reply := echoModel(r)
	reply.Latency = delivery.DefaultPlaceholderAfter + 300*time.Millisecond
	return reply
}

// TestSlackQuickAnswerIsPostedNotStreamed proves an answer ready within the placeholder's grace
// period is posted as one message in a thread that streams — no chat.startStream and
// chat.stopStream for it.
func TestSlackQuickAnswerIsPostedNotStreamed(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, nil)
	e.start()
	ts, _ := e.sl.PushMentionPair(slackfake.Msg{Channel: "C0GEN", User: slackAnn, Text: slackfake.Mention() + " quick one"})
	got := e.waitSlackAnswers("C0GEN", ts, 1)
	if got[0].Streamed || strings.Count(slackVisible(got[0]), "echo: quick one") != 1 {
		t.Fatalf("answer %+v, want the answer posted once", got[0])
	}
	for _, m := range []string{"chat.startStream", "chat.appendStream", "chat.stopStream"} {
		if n := e.sl.Count(m); n != 0 {
			t.Errorf("%d %s calls for an answer ready at once", n, m)
		}
	}
}

// TestSlackMentionThreadStreamsToTheMentioner proves a channel mention's thread is answered by
// a stream addressed to the user who mentioned the bot, as Slack requires outside DMs.
func TestSlackMentionThreadStreamsToTheMentioner(t *testing.T) {
	t.Parallel()
	e := newSlackE2E(t, nil)
	e.model.SetFunc(echoPastGrace)
	e.start()
	ts, _ := e.sl.PushMentionPair(slackfake.Msg{Channel: "C0GEN", User: slackAnn, Text: slackfake.Mention() + " what is up"})
	m := e.waitStreamed("C0GEN", ts, "echo: what is up")
	if strings.Count(slackVisible(m), "echo: what is up") != 1 {
		t.Fatalf("the stream shows %q", slackVisible(m))
	}
	calls := e.sl.CallsOf("chat.startStream")
	if len(calls) != 1 || calls[0].Params["recipient_user_id"] != slackAnn || calls[0].Params["recipient_team_id"] != slackfake.TeamID || calls[0].Params["thread_ts"] != ts {
		t.Fatalf("chat.startStream calls %+v", calls)
	}
}
