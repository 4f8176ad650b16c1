package slack

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/conv"
)

// statusText is what the thread shows while a run works.
const statusText = "is thinking…"

// statusTimeout bounds one status call: the router signals typing before the envelope is
// acknowledged, so it must never hold the ack up.
const statusTimeout = 2 * time.Second

// threadStatuses keep the assistant threads' "is thinking…" status (assistant.threads.setStatus)
// for Typing: set (at once, or StatusAfter later), cleared by the run's final answer, never
// shown after it. Every method is safe for concurrent use.
type threadStatuses struct {
	cfg      *Config
	web      *webAPI
	installs *installs
	clock    *kit.Clock
	log      *slog.Logger
	after    time.Duration // Config.StatusAfter
	states   sync.Map      // channel/thread → *threadState
	refused  sync.Map      // channel id → struct{}: setStatus refused there
	lookups  atomic.Int64
	timers   sync.WaitGroup // sets scheduled (after) and not yet done or stopped
	stopped  atomic.Bool    // Stop came: no status is scheduled or set any more
}

// typing is Typing for a channel whose status is on.
func (s *threadStatuses) typing(ctx context.Context, to channels.Target) error {
	k := to.Conv
	if k.Thread == "" {
		return nil
	}
	if _, no := s.refused.Load(k.Chat); no {
		return nil
	}
	st := s.thread(k)
	defer st.mu.Unlock()
	if to.ReplyTo != "" && !tsBefore(st.answered, to.ReplyTo) {
		// The message is answered already (a fast run overtook the router's signal): a status
		// set now would stay after the answer.
		return nil
	}
	if s.after > 0 {
		s.schedule(k, st, to.ReplyTo)
		return nil
	}
	return s.show(ctx, k, st)
}

// schedule sets k's thread's status StatusAfter from now, unless it shows or is due
// already; st is locked. The latest message signalled is the one whose answer cancels it.
func (s *threadStatuses) schedule(k conv.Key, st *threadState, replyTo string) {
	if replyTo != "" && tsBefore(st.waitFor, replyTo) {
		st.waitFor = replyTo
	}
	if st.showing(s.clock.Now()) || st.timer != nil || s.stopped.Load() {
		return
	}
	st.due++
	due := st.due
	s.timers.Add(1)
	st.timer = time.AfterFunc(s.after, func() {
		defer s.timers.Done()
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.timer == nil || st.due != due {
			return // cancelled by an answer (clear) or by Stop
		}
		st.timer = nil
		if s.stopped.Load() || (st.waitFor != "" && !tsBefore(st.answered, st.waitFor)) {
			return
		}
		if _, no := s.refused.Load(k.Chat); no {
			return
		}
		if err := s.show(context.Background(), k, st); err != nil {
			s.log.Debug("slack: setting the thread status failed", "channel", k.Chat, "err", err)
		}
	})
}

// cancel stops a thread's scheduled status, if any; st is locked.
func (s *threadStatuses) cancel(st *threadState) {
	if st.timer != nil {
		if st.timer.Stop() {
			s.timers.Done() // it will not run
		}
		st.timer = nil
	}
}

// stop stops the scheduled statuses (Stop); those already running finish.
func (s *threadStatuses) stop() {
	s.stopped.Store(true)
	s.states.Range(func(_, v any) bool {
		st := v.(*threadState)
		st.mu.Lock()
		s.cancel(st)
		st.mu.Unlock()
		return true
	})
}

// show sets k's thread's status now; st is locked.
func (s *threadStatuses) show(ctx context.Context, k conv.Key, st *threadState) error {
	err := s.set(ctx, k, statusText)
	var ae *APIError
	switch {
	case errors.As(err, &ae):
		s.refused.Store(k.Chat, struct{}{})
		err = nil
	case err == nil:
		st.shown, st.shownAt = true, s.clock.Now()
	}
	if _, limited := errors.AsType[*channels.RateLimitError](err); limited {
		return nil
	}
	return err
}

// threadState orders one thread's status calls — a clear waits for a set in flight, so the
// answer never overtakes the "is thinking…" it should remove — and remembers the latest
// message answered there, so that a signal for it coming after its answer is not shown.
type threadState struct {
	mu       sync.Mutex
	shown    bool        // the last call made in the thread set the status
	shownAt  time.Time   // when it did
	posted   time.Time   // when the bot last posted a working message in the thread
	answered string      // ts of the latest message answered in the thread
	timer    *time.Timer // the status set scheduled (StatusAfter), until it runs or is cancelled
	due      uint64      // counts the sets scheduled, so a cancelled one that runs anyway does nothing
	waitFor  string      // ts of the latest message signalled while one was scheduled
	used     time.Time   // the last status call or answer
	gone     bool        // dropped from threadStatuses.states: look the thread up again
}

// answeredMemory is how long a thread's state is kept once it shows nothing: the router signals
// a run right after queueing it, so an answer that overtakes the signal is seconds old at most.
const answeredMemory = time.Minute

// thread returns k's thread's state, locked. Every 1,024 lookups, states that show nothing
// and were unused for answeredMemory are dropped.
func (s *threadStatuses) thread(k conv.Key) *threadState {
	if s.lookups.Add(1)%1024 == 0 {
		s.prune()
	}
	key := k.Chat + "/" + k.Thread
	for {
		v, _ := s.states.LoadOrStore(key, &threadState{})
		st := v.(*threadState)
		st.mu.Lock()
		if !st.gone {
			st.used = s.clock.Now()
			return st
		}
		st.mu.Unlock()
	}
}

func (s *threadStatuses) prune() {
	now := s.clock.Now()
	s.states.Range(func(key, v any) bool {
		st := v.(*threadState)
		if st.mu.TryLock() {
			if !st.shown && st.timer == nil && now.Sub(st.used) > answeredMemory {
				st.gone = true
				s.states.CompareAndDelete(key, st)
			}
			st.mu.Unlock()
		}
		return true
	})
}

// tsBefore reports whether Slack timestamp a is earlier than b. "" is earlier than any; when
// either is not a timestamp it reports true, so an unknown message's signal is shown.
func tsBefore(a, b string) bool {
	if a == "" {
		return true
	}
	as, af, ok1 := strings.Cut(a, ".")
	bs, bf, ok2 := strings.Cut(b, ".")
	if !ok1 || !ok2 || !digits(as) || !digits(af) || !digits(bs) || !digits(bf) || len(af) != len(bf) {
		return true
	}
	if len(as) != len(bs) {
		return len(as) < len(bs)
	}
	return as+"."+af < bs+"."+bf
}

func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// setStatusBody is assistant.threads.setStatus's JSON body: loading_messages is an array,
// which slack-go would send as one comma-joined string.
// https://docs.slack.dev/reference/methods/assistant.threads.setStatus
type setStatusBody struct {
	ChannelID       string   `json:"channel_id"`
	ThreadTS        string   `json:"thread_ts"`
	Status          string   `json:"status"`
	LoadingMessages []string `json:"loading_messages,omitempty"`
}

// set makes one assistant.threads.setStatus call, within statusTimeout: status with the
// configured loading messages, or "" (and none) to clear it. A 429 is counted and returned,
// never waited out.
func (s *threadStatuses) set(ctx context.Context, k conv.Key, status string) error {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	token, err := s.installs.token(ctx, k.Workspace)
	if err != nil {
		return err
	}
	body := setStatusBody{ChannelID: k.Chat, ThreadTS: k.Thread, Status: status}
	if status != "" {
		body.LoadingMessages = s.cfg.LoadingMessages
	}
	_, err = s.web.postJSON(ctx, token, "assistant.threads.setStatus", body)
	if err != nil {
		err = s.web.apiError("assistant.threads.setStatus", err)
		if _, limited := errors.AsType[*channels.RateLimitError](err); limited {
			s.cfg.Metrics.RateLimited("assistant.threads.setStatus")
		}
	}
	return err
}

// statusLasts is how long a status set is taken to show: Slack removes it after two minutes
// without a message, so a run working longer has it set again by the next typing refresh.
const statusLasts = 100 * time.Second

// showing reports whether the status set last still shows: Slack clears it when the bot posts
// in the thread (a working card) and after two minutes, and the next Typing sets it again.
func (st *threadState) showing(now time.Time) bool {
	return st.shown && !st.posted.After(st.shownAt) && now.Sub(st.shownAt) < statusLasts
}

// posted records that the bot posted a working message in k's thread, which cleared the
// status Slack showed there.
func (s *threadStatuses) posted(k conv.Key) {
	if s.cfg.AssistantStatusOff || k.Thread == "" {
		return
	}
	st := s.thread(k)
	st.posted = s.clock.Now()
	st.mu.Unlock()
}

// clear clears a status Typing set, or is setting, in the conversation's thread, once the
// message answered (its ts; "" when not known) has its final answer.
func (s *threadStatuses) clear(ctx context.Context, k conv.Key, answered string) {
	if s.cfg.AssistantStatusOff || k.Thread == "" {
		return
	}
	st := s.thread(k)
	defer st.mu.Unlock()
	if answered != "" && tsBefore(st.answered, answered) {
		st.answered = answered
	}
	if answered == "" || !tsBefore(st.answered, st.waitFor) {
		s.cancel(st) // the run it was for is answered: no status to show
	}
	if st.shown {
		st.shown = false
		if err := s.set(ctx, k, ""); err != nil {
			s.log.Debug("slack: clearing the thread status failed", "channel", k.Chat, "err", err)
		}
	}
}

// clearAnyway clears the thread's status after a run's closing message failed to go out
// (delivery may still post it another way): the run is over either way, and a status left set
// would say it still works. It clears even when ctx has ended (a shutdown), within setStatus's
// own bound.
func (s *threadStatuses) clearAnyway(ctx context.Context, k conv.Key, answered string) {
	s.clear(context.WithoutCancel(ctx), k, answered)
}
