package router

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
)

// The contract the in-memory store and queue (memstore_test.go, memqueue_test.go) keep with
// threads.Store and runs.Queue: every case runs on both, so the fakes the router's tests run on
// cannot drift from what they stand for.

// onBothBackends runs test on a harness in memory and on one on Redis, made with tweak.
func onBothBackends(t *testing.T, test func(t *testing.T, h *harness), tweak ...func(*Options, *runs.Options)) {
	t.Helper()
	for _, b := range []struct {
		name string
		new  func(*testing.T, ...func(*Options, *runs.Options)) *harness
	}{{"memory", newHarness}, {"redis", newRedisHarness}} {
		t.Run(b.name, func(t *testing.T) { test(t, b.new(t, tweak...)) })
	}
}

func mustOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

// signedEnvelope is a message run in c as the router signs it.
func signedEnvelope(h *harness, c conv.Key, text string) *runs.Envelope {
	env := &runs.Envelope{RunID: runs.NewRunID(), Kind: runs.KindMessage, Conv: c, Text: text,
		Identity: conv.Identity{Platform: c.Platform, ChannelUserID: "u1"}, CreatedAt: time.Now()}
	h.signer.Sign(env)
	return env
}

// TestContractDedupeClaim proves an event's claim: taken once, pending under its token until
// completed (a duplicate then) or given back (claimable again), taken again by the same token,
// never by two claimers at once, expiring on its own; an invalid intake takes nothing.
func TestContractDedupeClaim(t *testing.T) {
	onBothBackends(t, func(t *testing.T, h *harness) {
		s, ctx := h.store, h.ctx
		type claim struct{ claimed, pending bool }
		intake := func(what, key, token string, want claim) {
			t.Helper()
			res, err := s.Intake(ctx, threads.IntakeRequest{ClaimKey: key, ClaimTTL: time.Minute, ClaimToken: token})
			mustOK(t, what, err)
			if got := (claim{res.Claimed, res.ClaimPending}); got != want {
				t.Errorf("%s: %+v, want %+v", what, got, want)
			}
		}
		intake("the first delivery", "event:1", "a", claim{claimed: true})
		intake("another delivery meanwhile", "event:1", "b", claim{pending: true})
		intake("the same delivery again", "event:1", "a", claim{claimed: true})
		mustOK(t, "complete under another token", s.CompleteClaim(ctx, "event:1", "b", time.Minute))
		intake("after another token's completion", "event:1", "b", claim{pending: true})
		mustOK(t, "complete", s.CompleteClaim(ctx, "event:1", "a", time.Minute))
		intake("a redelivery of the handled event", "event:1", "b", claim{})
		mustOK(t, "release a completed claim", s.ReleaseClaim(ctx, "event:1", "a"))
		intake("after releasing a completed claim", "event:1", "c", claim{})

		intake("event 2", "event:2", "a", claim{claimed: true})
		mustOK(t, "release under another token", s.ReleaseClaim(ctx, "event:2", "b"))
		intake("after another token's release", "event:2", "c", claim{pending: true})
		mustOK(t, "release", s.ReleaseClaim(ctx, "event:2", "a"))
		intake("a redelivery after the release", "event:2", "c", claim{claimed: true})

		claimed := func(key string, ttl time.Duration) bool {
			t.Helper()
			ok, err := s.Claim(ctx, key, ttl)
			mustOK(t, "claim "+key, err)
			return ok
		}
		if !claimed("decide:1", time.Minute) || claimed("decide:1", time.Minute) {
			t.Error("Claim did not take a free key exactly once")
		}
		mustOK(t, "release", s.Release(ctx, "decide:1"))
		if !claimed("decide:1", time.Minute) {
			t.Error("a released key could not be claimed")
		}
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if ok, err := s.Claim(ctx, "decide:2", time.Minute); err != nil {
					t.Error(err)
				} else if ok {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Errorf("%d of 8 concurrent claims won, want 1", n)
		}
		if !claimed("event:3", 50*time.Millisecond) {
			t.Fatal("a free key could not be claimed")
		}
		waitFor(t, "the claim to expire", func() bool { return claimed("event:3", time.Minute) })

		_, err := s.Intake(ctx, threads.IntakeRequest{ClaimKey: "event:4", ClaimTTL: time.Minute, ClaimToken: "a", ConvKey: strings.Repeat("x", 2000)})
		wantErr(t, "an intake with an oversized conversation key", err, threads.ErrInvalidArgument)
		intake("after an invalid intake", "event:4", "b", claim{claimed: true})
		_, err = s.Claim(ctx, "", time.Minute)
		wantErr(t, "a claim without a key", err, threads.ErrInvalidArgument)
		_, err = s.Claim(ctx, "event:5", 0)
		wantErr(t, "a claim without a ttl", err, threads.ErrInvalidArgument)
	})
}

// TestContractMarksAndAccess proves marks (set, read by Intake, replaced, dropped, expiring,
// apart from claims) and the runtime access lists (allow and deny exclude each other; an empty
// id is invalid).
func TestContractMarksAndAccess(t *testing.T) {
	onBothBackends(t, func(t *testing.T, h *harness) {
		s, ctx := h.store, h.ctx
		marked := func(key string) string {
			t.Helper()
			res, err := s.Intake(ctx, threads.IntakeRequest{MarkedKey: key})
			mustOK(t, "intake", err)
			v, found, err := s.Marked(ctx, key)
			mustOK(t, "marked", err)
			if found != res.IsMarked || string(v) != string(res.Marked) {
				t.Errorf("Marked(%s) = %q, %v; Intake read %q, %v", key, v, found, res.Marked, res.IsMarked)
			}
			if !found {
				return "<none>"
			}
			return string(v)
		}
		mustOK(t, "mark", s.Mark(ctx, "thread:x", []byte("1"), time.Minute))
		mustOK(t, "mark again", s.Mark(ctx, "thread:x", []byte("2"), time.Minute))
		if v := marked("thread:x"); v != "2" {
			t.Errorf("mark = %s, want the later value 2", v)
		}
		if ok, err := s.Claim(ctx, "thread:x", time.Minute); err != nil || !ok {
			t.Errorf("a mark's key is claimed already (%v, %v): claims and marks must be apart", ok, err)
		}
		mustOK(t, "unmark", s.Unmark(ctx, "thread:x"))
		if v := marked("thread:x"); v != "<none>" {
			t.Errorf("mark after Unmark = %s", v)
		}
		// The mark lives long enough to be read back on a busy machine; its expiry is waited for
		// through Marked alone, since Intake and Marked read it one after the other and may
		// straddle the moment it expires. Once it has, both must say so.
		_, err := s.Intake(ctx, threads.IntakeRequest{Marks: []threads.MarkWrite{{Key: "reply:1", Value: []byte("m1"), TTL: 500 * time.Millisecond}}})
		mustOK(t, "intake writing a mark", err)
		if v := marked("reply:1"); v != "m1" {
			t.Errorf("the intake's mark = %s, want m1", v)
		}
		waitFor(t, "the mark to expire", func() bool {
			_, found, err := s.Marked(ctx, "reply:1")
			return err == nil && !found
		})
		if v := marked("reply:1"); v != "<none>" {
			t.Errorf("the intake's mark after its TTL = %s, want none", v)
		}

		access := func(what string, wantAllowed, wantDenied bool) {
			t.Helper()
			res, err := s.Intake(ctx, threads.IntakeRequest{Platform: "test", UserID: "u9"})
			mustOK(t, what, err)
			a, d, err := s.AccessOverride(ctx, "test", "u9")
			mustOK(t, what, err)
			if res.Allowed != wantAllowed || res.Denied != wantDenied || a != wantAllowed || d != wantDenied {
				t.Errorf("%s: intake %v/%v, override %v/%v; want allowed %v, denied %v", what, res.Allowed, res.Denied, a, d, wantAllowed, wantDenied)
			}
		}
		access("no decision", false, false)
		mustOK(t, "allow", s.AllowUser(ctx, "test", "u9"))
		access("allowed", true, false)
		mustOK(t, "deny", s.DenyUser(ctx, "test", "u9"))
		access("denied", false, true)
		wantErr(t, "allowing an empty id", s.AllowUser(ctx, "test", ""), threads.ErrInvalidArgument)
		wantErr(t, "denying on no platform", s.DenyUser(ctx, "", "u9"), threads.ErrInvalidArgument)
	})
}

// TestContractClarificationTakenOnce proves a clarification is taken once, by its user (or by
// anyone when it says threads.AnyoneMayAnswer), and the errors of every other take: foreign,
// answered, withdrawn, replaced, expired, unknown; and that it is open to Intake and
// Pending only while pending and unexpired.
func TestContractClarificationTakenOnce(t *testing.T) {
	onBothBackends(t, func(t *testing.T, h *harness) {
		s, ctx := h.store, h.ctx
		cl := s.Clars()
		open := func(c conv.Key) string {
			t.Helper()
			p, ok, err := cl.Pending(ctx, c.String())
			mustOK(t, "pending clarification", err)
			res, err := s.Intake(ctx, threads.IntakeRequest{ConvKey: c.String()})
			mustOK(t, "intake", err)
			if ok != res.HasPending || p.ID != res.Pending.ID {
				t.Errorf("Pending %q, %v; Intake read %q, %v", p.ID, ok, res.Pending.ID, res.HasPending)
			}
			if !ok {
				return "<none>"
			}
			return p.ID
		}
		take := func(id, user string) (threads.Clarification, error) {
			return cl.Take(ctx, id, user)
		}

		c := dm("q1")
		id := putQuestion(t, h, c, "u1", peopleForm)
		if got := open(c); got != id {
			t.Fatalf("open question %s, want %s", got, id)
		}
		_, err := take(id, "u2")
		var foreign *threads.ForeignAnswerError
		if !errors.As(err, &foreign) || !errors.Is(err, threads.ErrNotYourClarification) {
			t.Errorf("another user's answer: %v, want a *ForeignAnswerError", err)
		}
		got, err := take(id, "u1")
		if err != nil || got.State != threads.StateAnswered || got.AnsweredBy != "u1" {
			t.Fatalf("the user's answer: %+v, %v", got, err)
		}
		_, err = take(id, "u1")
		wantErr(t, "a second answer", err, threads.ErrClarificationAnswered)
		if got, err := cl.Get(ctx, id); err != nil || got.State != threads.StateAnswered || got.AnsweredBy != "u1" {
			t.Errorf("the answered question reads %+v, %v", got, err)
		}
		if got := open(c); got != "<none>" {
			t.Errorf("an answered question is still open: %s", got)
		}
		again, err := cl.Get(ctx, id)
		mustOK(t, "get", err)
		_, err = cl.Put(ctx, again)
		mustOK(t, "put the same question again", err)
		if got, _ := cl.Get(ctx, id); got.State != threads.StateAnswered {
			t.Errorf("putting an answered question again reopened it: %s", got.State)
		}
		again.ConvKey = dm("elsewhere").String()
		_, err = cl.Put(ctx, again)
		wantErr(t, "its id in another conversation", err, threads.ErrDuplicateClarification)

		anyone := putQuestion(t, h, dm("q2"), threads.AnyoneMayAnswer, peopleForm)
		if got, err := take(anyone, "whoever"); err != nil || got.AnsweredBy != "whoever" {
			t.Errorf("anyone's answer to a question for anyone: %+v, %v", got, err)
		}

		withdrawn := putQuestion(t, h, dm("q3"), "u1", peopleForm)
		w, ok, err := cl.Withdraw(ctx, dm("q3").String())
		if err != nil || !ok || w.ID != withdrawn || w.State != threads.StateCancelled {
			t.Errorf("withdraw: %+v, %v, %v", w, ok, err)
		}
		_, err = take(withdrawn, "u1")
		wantErr(t, "answering a withdrawn question", err, threads.ErrClarificationCancelled)
		if _, ok, err := cl.Withdraw(ctx, dm("q3").String()); ok || err != nil {
			t.Errorf("withdrawing again: %v, %v; want nothing open", ok, err)
		}

		replaced := putQuestion(t, h, dm("q4"), "u1", peopleForm)
		newer := putQuestion(t, h, dm("q4"), "u1", peopleForm)
		_, err = cl.Get(ctx, replaced)
		wantErr(t, "reading a replaced question", err, threads.ErrClarificationCancelled)
		_, err = take(replaced, "u1")
		wantErr(t, "answering a replaced question", err, threads.ErrClarificationCancelled)
		if got := open(dm("q4")); got != newer {
			t.Errorf("open question %s, want the newer %s", got, newer)
		}

		_, err = cl.Get(ctx, "qnope")
		wantErr(t, "reading an unknown question", err, threads.ErrClarificationNotFound)
		_, err = take("qnope", "u1")
		wantErr(t, "answering an unknown question", err, threads.ErrClarificationNotFound)

		expired := putQuestion(t, h, dm("q5"), "u1", peopleForm)
		h.clock.Advance(2 * time.Hour)
		_, err = take(expired, "u1")
		wantErr(t, "answering after the expiry", err, threads.ErrClarificationExpired)
		if got := open(dm("q5")); got != "<none>" {
			t.Errorf("an expired question is open: %s", got)
		}
		if _, ok, err := cl.Withdraw(ctx, dm("q5").String()); ok || err != nil {
			t.Errorf("withdrawing an expired question: %v, %v; want it not reported open", ok, err)
		}
		h.clock.Advance(-2 * time.Hour)
		_, err = take(expired, "u1")
		wantErr(t, "answering an expired question withdrawn", err, threads.ErrClarificationCancelled)
	})
}

// TestContractThreadReset proves Ensure creates a conversation's thread once, and Reset starts it
// over: a new thread keeping the settings, its open question withdrawn.
func TestContractThreadReset(t *testing.T) {
	onBothBackends(t, func(t *testing.T, h *harness) {
		s, ctx, c := h.store, h.ctx, dm("reset").String()
		wantErr(t, "settings without a thread", s.SetSettings(ctx, c, threads.Settings{Model: "m"}), threads.ErrThreadNotFound)
		_, err := s.Get(ctx, c)
		wantErr(t, "a thread before Ensure", err, threads.ErrThreadNotFound)
		th, created, err := s.Ensure(ctx, c)
		if err != nil || !created || th.ID == "" || th.ConvKey != c {
			t.Fatalf("Ensure: %+v, %v, %v", th, created, err)
		}
		if again, created, err := s.Ensure(ctx, c); err != nil || created || again.ID != th.ID {
			t.Errorf("Ensure again: %+v, %v, %v; want the same thread", again, created, err)
		}
		mustOK(t, "set settings", s.SetSettings(ctx, c, threads.Settings{Model: "m", Extra: map[string]string{"k": "v"}}))
		q := putQuestion(t, h, dm("reset"), "u1", peopleForm)
		fresh, err := s.Reset(ctx, c)
		mustOK(t, "reset", err)
		if fresh.ID == th.ID || fresh.SessionID == th.SessionID || fresh.Settings.Model != "m" || fresh.Settings.Extra["k"] != "v" {
			t.Errorf("after Reset: %+v (before %+v); want a new thread and session, settings kept", fresh, th)
		}
		if got, err := s.GetSettings(ctx, c); err != nil || got.Model != "m" {
			t.Errorf("settings after Reset: %+v, %v", got, err)
		}
		_, err = s.Clars().Take(ctx, q, "u1")
		wantErr(t, "answering a question of the old thread", err, threads.ErrClarificationCancelled)
	})
}

// TestContractEnqueueOnceDuplicate proves an event's run is queued once: EnqueueOnce marks the
// event (Intake sees the mark) and refuses it again with runs.ErrDuplicate, queueing nothing;
// a refused run leaves no mark, and the mark expires.
func TestContractEnqueueOnceDuplicate(t *testing.T) {
	onBothBackends(t, func(t *testing.T, h *harness) {
		q, ctx, c := h.queue, h.ctx, dm("once")
		seen := func(event string) bool {
			t.Helper()
			res, err := h.store.Intake(ctx, threads.IntakeRequest{SeenKey: q.SeenKey(c, event)})
			mustOK(t, "intake", err)
			return res.Seen
		}
		first := signedEnvelope(h, c, "first")
		mustOK(t, "enqueue once", q.EnqueueOnce(ctx, first, "event:test:1", time.Minute))
		if !seen("event:test:1") {
			t.Error("the queued event is not marked")
		}
		wantErr(t, "its redelivery", q.EnqueueOnce(ctx, signedEnvelope(h, c, "again"), "event:test:1", time.Minute), runs.ErrDuplicate)
		if ids, err := q.QueuedRuns(ctx, c); err != nil || !slices.Equal(ids, []string{first.RunID}) {
			t.Errorf("queued %v (%v), want only the first run", ids, err)
		}
		mustOK(t, "another event", q.EnqueueOnce(ctx, signedEnvelope(h, c, "second"), "event:test:2", time.Minute))
		mustOK(t, "a run of no event", q.Enqueue(ctx, signedEnvelope(h, c, "third")))
		if n := h.queued(c); n != 3 {
			t.Errorf("%d runs queued, want 3", n)
		}
		if err := q.EnqueueOnce(ctx, signedEnvelope(h, c, "no ttl"), "event:test:9", 0); err == nil {
			t.Error("an event marked for no time was queued")
		}

		mustOK(t, "pause", q.Pause(ctx))
		wantErr(t, "enqueue while paused", q.EnqueueOnce(ctx, signedEnvelope(h, c, "paused"), "event:test:3", time.Minute), runs.ErrPaused)
		mustOK(t, "resume", q.Resume(ctx))
		if seen("event:test:3") {
			t.Error("a refused run left its event marked")
		}
		mustOK(t, "the refused event again", q.EnqueueOnce(ctx, signedEnvelope(h, c, "resumed"), "event:test:3", time.Minute))

		mustOK(t, "a short mark", q.EnqueueOnce(ctx, signedEnvelope(h, c, "short"), "event:test:4", 50*time.Millisecond))
		waitFor(t, "the event's mark to expire", func() bool { return !seen("event:test:4") })
		mustOK(t, "the event after its mark expired", q.EnqueueOnce(ctx, signedEnvelope(h, c, "later"), "event:test:4", time.Minute))
	})
}

// TestContractRefusalsQueueNothing proves the refusals the router answers politely: a
// *runs.BusyError at the conversation's and at the global limit, runs.ErrPaused while paused,
// each queueing nothing.
func TestContractRefusalsQueueNothing(t *testing.T) {
	onBothBackends(t, func(t *testing.T, h *harness) {
		q, ctx := h.queue, h.ctx
		busy := func(what string, err error, scope runs.BusyScope, limit int64) {
			t.Helper()
			var b *runs.BusyError
			if !errors.As(err, &b) || b.Scope != scope || b.Limit != limit {
				t.Errorf("%s: %v, want busy at the %s limit of %d", what, err, scope, limit)
			}
		}
		a, b := dm("a"), dm("b")
		mustOK(t, "a1", q.Enqueue(ctx, signedEnvelope(h, a, "a1")))
		mustOK(t, "a2", q.Enqueue(ctx, signedEnvelope(h, a, "a2")))
		busy("a3", q.Enqueue(ctx, signedEnvelope(h, a, "a3")), runs.ScopeConversation, 2)
		mustOK(t, "b1", q.Enqueue(ctx, signedEnvelope(h, b, "b1")))
		busy("b2", q.Enqueue(ctx, signedEnvelope(h, b, "b2")), runs.ScopeGlobal, 3)
		if na, nb := h.queued(a), h.queued(b); na != 2 || nb != 1 {
			t.Errorf("queued %d and %d, want 2 and 1", na, nb)
		}
		mustOK(t, "pause", q.Pause(ctx))
		if p, err := q.Paused(ctx); err != nil || !p {
			t.Errorf("Paused = %v, %v after Pause", p, err)
		}
		wantErr(t, "enqueue while paused", q.Enqueue(ctx, signedEnvelope(h, dm("c"), "c1")), runs.ErrPaused)
		if n := h.queued(dm("c")); n != 0 {
			t.Errorf("%d runs queued while paused", n)
		}
		mustOK(t, "resume", q.Resume(ctx))
		if p, err := q.Paused(ctx); err != nil || p {
			t.Errorf("Paused = %v, %v after Resume", p, err)
		}
	}, func(_ *Options, qo *runs.Options) { qo.MaxPerConversation, qo.MaxPending = 2, 3 })
}

// TestContractFIFOPerConversation proves each conversation's runs are queued and reach the
// worker in the order they were enqueued, verified, whatever other conversations queue between
// them.
func TestContractFIFOPerConversation(t *testing.T) {
	onBothBackends(t, func(t *testing.T, h *harness) {
		q, ctx := h.queue, h.ctx
		a, b := dm("fifo-a"), dm("fifo-b")
		want := map[conv.Key][]string{}
		for i, c := range []conv.Key{a, b, a, b, a} {
			env := signedEnvelope(h, c, fmt.Sprint(i))
			mustOK(t, "enqueue", q.Enqueue(ctx, env))
			want[c] = append(want[c], env.RunID)
		}
		for _, c := range []conv.Key{a, b} {
			if ids, err := q.QueuedRuns(ctx, c); err != nil || !slices.Equal(ids, want[c]) {
				t.Errorf("%s queued %v (%v), want %v", c, ids, err, want[c])
			}
		}
		if d, err := q.ConvDepth(ctx, a); err != nil || d.Queued != 3 || d.Conv != a {
			t.Errorf("depth of %s: %+v, %v", a, d, err)
		}
		if d, err := q.Depth(ctx); err != nil || d.Pending != 5 || len(d.Conversations) != 2 {
			t.Errorf("depth: %+v, %v; want 5 pending in 2 conversations", d, err)
		}
		h.startPool()
		got := map[conv.Key][]string{}
		for range 5 {
			env := h.nextRun()
			if err := h.signer.Verify(env); err != nil {
				t.Errorf("run %s: %v", env.RunID, err)
			}
			got[env.Conv] = append(got[env.Conv], env.RunID)
		}
		for _, c := range []conv.Key{a, b} {
			if !slices.Equal(got[c], want[c]) {
				t.Errorf("%s ran %v, want %v", c, got[c], want[c])
			}
		}
		waitFor(t, "the mailboxes to empty", func() bool { return h.queued(a) == 0 && h.queued(b) == 0 })
	})
}

// TestContractCancelEmptiesTheMailbox proves Cancel removes one queued run or all of them,
// counts them cancelled, and names an unknown run runs.ErrNotFound.
func TestContractCancelEmptiesTheMailbox(t *testing.T) {
	onBothBackends(t, func(t *testing.T, h *harness) {
		q, ctx, c := h.queue, h.ctx, dm("cancel")
		first, second := signedEnvelope(h, c, "1"), signedEnvelope(h, c, "2")
		mustOK(t, "enqueue", q.Enqueue(ctx, first))
		mustOK(t, "enqueue", q.Enqueue(ctx, second))
		_, err := q.Cancel(ctx, c, runs.NewRunID())
		wantErr(t, "cancelling an unknown run", err, runs.ErrNotFound)
		if got, err := q.Cancel(ctx, c, second.RunID); err != nil || got.Active != "" || !slices.Equal(got.Removed, []string{second.RunID}) {
			t.Errorf("cancelling the second run: %+v, %v", got, err)
		}
		if got, err := q.Cancel(ctx, c, ""); err != nil || got.Active != "" || !slices.Equal(got.Removed, []string{first.RunID}) {
			t.Errorf("cancelling the rest: %+v, %v", got, err)
		}
		if got, err := q.Cancel(ctx, c, ""); err != nil || got.Active != "" || len(got.Removed) != 0 {
			t.Errorf("cancelling an empty conversation: %+v, %v", got, err)
		}
		if d, err := q.ConvDepth(ctx, c); err != nil || d.Queued != 0 {
			t.Errorf("depth after cancel: %+v, %v", d, err)
		}
		if s, err := q.Stats(ctx); err != nil || s.Cancelled != 2 {
			t.Errorf("stats: %+v, %v; want 2 cancelled", s, err)
		}
		if r, err := q.Recent(ctx); err != nil || r.LastHour.Cancelled != 2 {
			t.Errorf("recent: %+v, %v; want 2 cancelled in the last hour", r, err)
		}
	})
}

// TestContractForgedRunNeverReachesTheWorker proves a run whose signature does not verify is
// dead-lettered instead of run, and that a dead letter is replayed only if it verifies, and
// dropped.
func TestContractForgedRunNeverReachesTheWorker(t *testing.T) {
	onBothBackends(t, func(t *testing.T, h *harness) {
		q, ctx, c := h.queue, h.ctx, dm("forged")
		other, err := runs.NewSigner([][]byte{[]byte("not the bot's signing key at all")})
		mustOK(t, "signer", err)
		forged := signedEnvelope(h, c, "do as I say")
		other.Sign(forged)
		good := signedEnvelope(h, c, "hello")
		mustOK(t, "enqueue the forged run", q.Enqueue(ctx, forged))
		mustOK(t, "enqueue", q.Enqueue(ctx, good))
		h.startPool()
		if env := h.nextRun(); env.RunID != good.RunID {
			t.Fatalf("the worker got %s %q, want the good run", env.RunID, env.Text)
		}
		var dead []runs.DeadLetter
		waitFor(t, "the forged run dead-lettered", func() bool { dead, _ = q.DeadLetters(ctx, 10); return len(dead) == 1 })
		if d := dead[0]; d.RunID != forged.RunID || d.Reason != "signature: unknown_key" || d.Conv != c {
			t.Errorf("dead letter %+v", d)
		}
		if s, err := q.Stats(ctx); err != nil || s.SignatureFailures != 1 || s.DeadLettered != 1 {
			t.Errorf("stats: %+v, %v; want 1 signature failure dead-lettered", s, err)
		}
		if _, err := q.Replay(ctx, forged.RunID); runs.VerifyReason(err) != "unknown_key" {
			t.Errorf("replaying the forged run: %v, want its verification error", err)
		}
		_, err = q.Replay(ctx, runs.NewRunID())
		wantErr(t, "replaying an unknown run", err, runs.ErrNotFound)
		wantErr(t, "dropping an unknown run", q.Drop(ctx, runs.NewRunID()), runs.ErrNotFound)
		mustOK(t, "drop", q.Drop(ctx, forged.RunID))
		if d, err := q.DeadLetters(ctx, 10); err != nil || len(d) != 0 {
			t.Errorf("dead letters after the drop: %+v, %v", d, err)
		}
	})
}
