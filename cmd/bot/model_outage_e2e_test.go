package main

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The words of the notice a run waiting out a model outage shows, and of its final failures.
const (
	outageNotice = "The model is not answering right now"
	cutNotice    = "answer was cut off"
)

// failingFirst answers the first n requests with bad and every later one with echoModel.
func failingFirst(n int64, bad modelserver.Reply) func(modelserver.Request) modelserver.Reply {
	var seen atomic.Int64
	return func(r modelserver.Request) modelserver.Reply {
		if seen.Add(1) <= n {
			return bad
		}
		return echoModel(r)
	}
}

// shownTexts is every text the bot sent or edited into chat, in order (HTML rendered).
func shownTexts(tg *telegramfake.Server, chat int64) []string {
	id := strconv.FormatInt(chat, 10)
	var out []string
	for _, c := range tg.Calls() {
		if (c.Method == "sendMessage" || c.Method == "editMessageText") && c.Params["chat_id"] == id && c.Status == 200 {
			v, err := telegramfake.ParseHTML(c.Params["text"])
			if err != nil || c.Params["parse_mode"] != "HTML" {
				v = c.Params["text"]
			}
			out = append(out, v)
		}
	}
	return out
}

// sends counts the successful sendMessage calls to chat.
func sends(tg *telegramfake.Server, chat int64) int {
	id, n := strconv.FormatInt(chat, 10), 0
	for _, c := range tg.Calls() {
		if c.Method == "sendMessage" && c.Params["chat_id"] == id && c.Status == 200 {
			n++
		}
	}
	return n
}

// fastOutageRetries makes a run's outage retries and the model client's own retries quick.
func fastOutageRetries(c *config.Config) {
	c.Runs.OutageRetryBase = 100 * time.Millisecond
	c.LLM.MaxRetries = 1
}

// TestModelOutageRetriesTheRunAndTellsTheUserOnce proves a model answering 500 for a while
// does not fail the run: the run is tried again later, the user sees one message — the
// placeholder telling once that the model is unavailable and the answer will follow — and
// that message becomes the one answer when the model recovers.
func TestModelOutageRetriesTheRunAndTellsTheUserOnce(t *testing.T) {
	t.Parallel()
	e := newE2E(t, fastOutageRetries)
	// Two tries per attempt (max_retries 1): the first two attempts of the run fail.
	e.model.SetFunc(failingFirst(4, modelserver.ServerError()))
	r := e.start()
	e.tg.PushPrivate(ann, "are you up?")
	got := e.waitAnswers(ann.ID, 1)
	if v := visible(got[0]); !strings.Contains(v, "echo: are you up?") || strings.Contains(v, outageNotice) {
		t.Fatalf("the answer shows %q, want the model's answer and no notice", v)
	}
	if n := sends(e.tg, ann.ID); n != 1 {
		t.Errorf("%d messages sent to the chat, want 1 (the notice, replaced by the answer)", n)
	}
	shown := shownTexts(e.tg, ann.ID)
	notices := 0
	for _, s := range shown {
		if strings.Contains(s, outageNotice) {
			notices++
		}
	}
	if notices == 0 {
		t.Errorf("the user was never told the model is unavailable; shown: %q", shown)
	}
	if n := e.model.Count(); n != 5 {
		t.Errorf("the model was asked %d times, want 5 (two failed attempts of two tries, then the answer)", n)
	}
	waitFor(t, "the run to end answered", 10*time.Second, func() bool { return counter(r.metrics.runs, "answered") == 1 })
	if n := counter(r.metrics.runs, "failed"); n != 0 {
		t.Errorf("%v runs failed, want none", n)
	}
	if d, err := r.core.queue.Depth(context.Background()); err != nil || d.DeadLetters != 0 {
		t.Errorf("dead letters %d, %v; want none", d.DeadLetters, err)
	}
	// Issue 14 point 5: model errors, model latency and the queue's retries are metrics.
	if u, ok := counter(r.metrics.modelCalls, "unavailable"), counter(r.metrics.modelCalls, "ok"); u != 2 || ok != 1 {
		t.Errorf("switchboard_model_calls_total: unavailable %v, ok %v; want 2 and 1 (two failed attempts, then the answer)", u, ok)
	}
	if n := counter(r.metrics.recoveries, "retry"); n != 2 {
		t.Errorf("switchboard_run_recoveries_total{kind=retry} = %v, want 2", n)
	}
	if n := histogramCount(r.metrics.modelSeconds, "ok"); n != 1 {
		t.Errorf("switchboard_model_call_seconds{result=ok} counted %d calls, want 1", n)
	}
}

// histogramCount reads how many observations one labelled histogram holds.
func histogramCount(v *prometheus.HistogramVec, labels ...string) uint64 {
	var m dto.Metric
	h, ok := v.WithLabelValues(labels...).(prometheus.Histogram)
	if !ok || h.Write(&m) != nil {
		return 0
	}
	return m.GetHistogram().GetSampleCount()
}

// TestModelHangingPastTheTimeoutIsRetried proves a model that hangs past llm.timeout is a
// transient failure too: the run is tried again and answered, in one message.
func TestModelHangingPastTheTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	e := newE2E(t, func(c *config.Config) {
		fastOutageRetries(c)
		c.LLM.Timeout = 700 * time.Millisecond
	})
	e.model.SetFunc(failingFirst(1, modelserver.Hang()))
	e.start()
	e.tg.PushPrivate(ann, "still there?")
	got := e.waitAnswers(ann.ID, 1)
	if v := visible(got[0]); !strings.Contains(v, "echo: still there?") {
		t.Fatalf("the answer shows %q, want the model's answer", v)
	}
	if n := sends(e.tg, ann.ID); n != 1 {
		t.Errorf("%d messages sent to the chat, want 1", n)
	}
	if n := e.model.Count(); n != 2 {
		t.Errorf("the model was asked %d times, want 2 (the hung call, then the answer)", n)
	}
}

// TestPermanentModelErrorFailsAtOnce proves a model refusal retrying cannot fix — the API key
// (401), an unknown model (404), a bad request (400) — fails the run at once: one model call, no
// retry, no notice, and one short message the user can read, which holds neither the key nor
// the provider's text.
func TestPermanentModelErrorFailsAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		reply  modelserver.Reply
		reason string
	}{
		{"401 API key", modelserver.Unauthorized(), "refused the bot's API key"},
		{"404 model", modelserver.NotFound(), "does not know the model"},
		{"400 request", modelserver.Reply{Status: 400, ErrorMessage: "context too long for sk-e2e-test"}, "refused this request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newE2E(t, fastOutageRetries)
			e.model.SetFunc(func(modelserver.Request) modelserver.Reply { return tc.reply })
			r := e.start()
			e.tg.PushPrivate(ann, "hello")
			got := e.waitAnswers(ann.ID, 1)
			v := visible(got[0])
			if !strings.Contains(v, tc.reason) {
				t.Errorf("the failure shows %q, want the short reason %q", v, tc.reason)
			}
			for _, leak := range []string{e.cfg.LLM.APIKey, "Incorrect API key", "does not exist", "context too long", "llm:"} {
				if strings.Contains(v, leak) {
					t.Errorf("the failure shows %q, which holds %q", v, leak)
				}
			}
			for _, s := range shownTexts(e.tg, ann.ID) {
				if strings.Contains(s, outageNotice) {
					t.Errorf("a permanent failure showed the outage notice: %q", s)
				}
			}
			waitFor(t, "the run to end failed", 10*time.Second, func() bool { return counter(r.metrics.runs, "failed") == 1 })
			if n := counter(r.metrics.modelCalls, "failed"); n != 1 {
				t.Errorf("switchboard_model_calls_total{result=failed} = %v, want 1", n)
			}
			if n := e.model.Count(); n != 1 {
				t.Errorf("the model was asked %d times, want 1 (no retry)", n)
			}
			if n := sends(e.tg, ann.ID); n != 1 {
				t.Errorf("%d messages sent to the chat, want 1", n)
			}
		})
	}
}

// TestStreamCutNeverLeavesAHalfAnswer proves an answer whose stream breaks off mid-way is never
// shown in part: a later attempt's full answer replaces it, and when every attempt is cut the
// run's one message says the answer was cut.
func TestStreamCutNeverLeavesAHalfAnswer(t *testing.T) {
	t.Parallel()
	const partial = "PARTIAL ANSWER THAT MUST NEVER BE SHOWN"
	cut := modelserver.Reply{Content: partial + strings.Repeat(" more words", 50), ChunkSize: 16, DropMidStream: true}
	checkNoPartial := func(t *testing.T, e *e2e) {
		t.Helper()
		for _, s := range shownTexts(e.tg, ann.ID) {
			if strings.Contains(s, "PARTIAL") {
				t.Errorf("part of a cut answer was shown: %q", s)
			}
		}
	}
	t.Run("a retry replaces it", func(t *testing.T) {
		e := newE2E(t, fastOutageRetries)
		e.model.SetFunc(failingFirst(1, cut))
		e.start()
		e.tg.PushPrivate(ann, "tell me")
		got := e.waitAnswers(ann.ID, 1)
		if v := visible(got[0]); !strings.Contains(v, "echo: tell me") {
			t.Fatalf("the answer shows %q, want the full answer", v)
		}
		if n := e.model.Count(); n != 2 {
			t.Errorf("the model was asked %d times, want 2 (a cut stream is not retried inside the call)", n)
		}
		checkNoPartial(t, e)
	})
	t.Run("a final failure says it was cut", func(t *testing.T) {
		e := newE2E(t, func(c *config.Config) {
			fastOutageRetries(c)
			c.Runs.MaxAttempts = 2
		})
		e.model.SetFunc(func(modelserver.Request) modelserver.Reply { return cut })
		r := e.start()
		e.tg.PushPrivate(ann, "tell me")
		got := e.waitAnswers(ann.ID, 1)
		waitFor(t, "the run dead-lettered", 10*time.Second, func() bool {
			d, err := r.core.queue.Depth(context.Background())
			return err == nil && d.DeadLetters == 1
		})
		if v := visible(got[0]); !strings.Contains(v, cutNotice) || strings.Contains(v, "I am asking again") {
			t.Errorf("the failure shows %q, want it to say the answer was cut", v)
		}
		if n := sends(e.tg, ann.ID); n != 1 {
			t.Errorf("%d messages sent to the chat, want 1", n)
		}
		checkNoPartial(t, e)
	})
}
