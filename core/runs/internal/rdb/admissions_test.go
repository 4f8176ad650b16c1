package rdb

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// backdate moves member's admission to at (ms): the passage of time without waiting.
func backdate(t *testing.T, s *Store, member string, at int64) {
	t.Helper()
	if ok, err := s.Client().HExists(ctx, s.admittedKey(), member).Result(); err != nil || !ok {
		t.Fatalf("backdate %s: not admitted (%v)", member, err)
	}
	if err := s.Client().HSet(ctx, s.admittedKey(), member, at).Err(); err != nil {
		t.Fatal(err)
	}
}

func admitted(t *testing.T, s *Store) []string {
	t.Helper()
	m, err := s.Client().HKeys(ctx, s.admittedKey()).Result()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(m)
	return m
}

func TestScriptEnqueueRefusesLateAdmission(t *testing.T) {
	s := newStore(t)
	_, at := admit(t, s, "a", 0, "")
	req := EnqueueReq{Tag: tag, Entry: Entry("a", []byte("env-a")), Now: ms(0), ConvKey: "k", AdmittedAt: at - 2*time.Minute.Milliseconds(), Window: time.Minute}
	if r, err := s.Mailboxes().Enqueue(ctx, req); err != nil || r.Status != StatusLate || ids(t, s) != "[]" {
		t.Fatalf("push of an admission older than the window = %+v, %v, mailbox %s; want late and nothing pushed", r, err, ids(t, s))
	}
	if _, ok, _ := s.Mailboxes().ConvState(ctx, tag); ok {
		t.Error("a late push scheduled the conversation")
	}
	req.AdmittedAt = at
	if r, err := s.Mailboxes().Enqueue(ctx, req); err != nil || r.Status != StatusNew || ids(t, s) != "[a]" {
		t.Fatalf("push within the window = %+v, %v, mailbox %s", r, err, ids(t, s))
	}
	req.AdmittedAt, req.Entry = 0, Entry("b", []byte("env-b"))
	if r, err := s.Mailboxes().Enqueue(ctx, req); err != nil || r.Status != StatusQueued || ids(t, s) != "[a b]" {
		t.Fatalf("push of a run admitted afterwards = %+v, %v, mailbox %s", r, err, ids(t, s))
	}
}

// TestReconcileForgetsOnlyFinishedRuns simulates what crashes leave counted and checks that the
// reconciliation removes exactly those, and never a run still in its mailbox or admitted lately.
func TestReconcileForgetsOnlyFinishedRuns(t *testing.T) {
	s := newStore(t)
	other := "{conv:ffffffffffffffffffffffffffffffff}"
	old := ms(-10 * time.Minute)

	// active: claimed by a worker, admitted long ago: stays.
	mustEnqueue(t, s, true, "active", 0, false)
	admit(t, s, "active", 0, tag)
	if c, _ := s.Leases().Claim(ctx, tag, "w", ms(0), ms(time.Minute)); c.Status != ClaimRun {
		t.Fatal(c)
	}
	// queued: behind it in its mailbox (a backlog): stays.
	mustEnqueue(t, s, false, "queued", 0, false)
	admit(t, s, "queued", 0, "")
	// unpushed: admitted, and its enqueuer died before pushing it: goes.
	admit(t, s, "unpushed", 0, "")
	// acked: run and acknowledged, and its worker died before the settler flushed: goes.
	if _, err := s.Mailboxes().Enqueue(ctx, EnqueueReq{Tag: other, Probe: true, Entry: Entry("acked", nil), Now: ms(0), ConvKey: "k2"}); err != nil {
		t.Fatal(err)
	}
	if st, _, err := s.Admissions().Ready(ctx, ReadyReq{Admit: AdmitCheck, Member: Member(other, "acked")}); err != nil || st != ReadyOK {
		t.Fatal(st, err)
	}
	if c, _ := s.Leases().Claim(ctx, other, "w", ms(0), ms(time.Minute)); c.Status != ClaimRun {
		t.Fatal(c)
	}
	if c, _ := s.Leases().Ack(ctx, other, "w", "acked", ms(time.Minute)); c.Status != ClaimIdle {
		t.Fatal(c)
	}
	// junk: members this package never writes: go.
	if err := s.Client().HSet(ctx, s.admittedKey(), "junk", old, Member(tag, "no-time"), "soon").Err(); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{Member(tag, "active"), Member(tag, "queued"), Member(tag, "unpushed"), Member(other, "acked")} {
		backdate(t, s, m, old)
	}
	// fresh: admitted just now, not pushed yet (its enqueuer is between its two steps): stays.
	admit(t, s, "fresh", 0, "")

	if n, err := s.Admissions().Reconcile(ctx, time.Minute, 200); err != nil || n != 4 {
		t.Fatalf("Reconcile = %d, %v; want 4 removed", n, err)
	}
	want := fmt.Sprint([]string{Member(tag, "active"), Member(tag, "fresh"), Member(tag, "queued")})
	if got := fmt.Sprint(admitted(t, s)); got != want {
		t.Errorf("admitted after reconciling = %s, want %s", got, want)
	}
	if n, err := s.Admissions().Reconcile(ctx, time.Minute, 200); err != nil || n != 0 {
		t.Errorf("second Reconcile = %d, %v; want nothing more", n, err)
	}
}

// TestReconcilePages interleaves finished and queued runs over several pages and scan calls.
func TestReconcilePages(t *testing.T) {
	s := newStore(t)
	old := ms(-time.Hour)
	var keep []string
	for i := range 500 {
		id := fmt.Sprintf("r%03d", i)
		if i%5 == 0 { // queued
			mustEnqueue(t, s, i == 0, id, 0, false)
			keep = append(keep, Member(tag, id))
		}
		admit(t, s, id, 0, "")
		backdate(t, s, Member(tag, id), old+int64(i%7))
	}
	if n, err := s.Admissions().Reconcile(ctx, time.Minute, 37); err != nil || n != 400 {
		t.Fatalf("Reconcile = %d, %v; want the 400 finished runs", n, err)
	}
	sort.Strings(keep)
	if got := admitted(t, s); fmt.Sprint(got) != fmt.Sprint(keep) {
		t.Errorf("admitted after reconciling = %d members, want the %d queued", len(got), len(keep))
	}
}

// TestScriptForgetKeepsLaterAdmissions: a run found absent at t and admitted again afterwards
// (a replayed dead letter) keeps its new admission.
func TestScriptForgetKeepsLaterAdmissions(t *testing.T) {
	s := newStore(t)
	_, at := admit(t, s, "a", 0, "")
	_, _ = admit(t, s, "b", 0, "")
	backdate(t, s, Member(tag, "b"), at-time.Hour.Milliseconds())
	cutoff := at - time.Minute.Milliseconds() // absent at t = at, reconciliation age a minute
	n, err := s.eval(ctx, scriptForget, []string{s.admittedKey()}, Member(tag, "a"), cutoff, Member(tag, "b"), cutoff, Member(tag, "gone"), cutoff).Int()
	if err != nil || n != 1 {
		t.Fatalf("forget = %d, %v; want only b", n, err)
	}
	if got := fmt.Sprint(admitted(t, s)); got != fmt.Sprint([]string{Member(tag, "a")}) {
		t.Errorf("admitted = %s, want the later admission of a", got)
	}
}

func TestSplitMember(t *testing.T) {
	tests := []struct {
		in        string
		tag, id   string
		ok        bool
		roundTrip bool
	}{
		{Member(tag, "01J0"), tag, "01J0", true, true},
		{"", "", "", false, false},
		{"junk", "", "", false, false},
		{"|id", "", "id", false, false},
		{"{conv:x}|", "{conv:x}", "", false, false},
		{"{conv:x}|a|b", "{conv:x}", "a|b", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			tg, id, ok := SplitMember(tt.in)
			if ok != tt.ok || (ok && (tg != tt.tag || id != tt.id)) {
				t.Errorf("SplitMember(%q) = %q, %q, %v", tt.in, tg, id, ok)
			}
			if tt.roundTrip && Member(tg, id) != tt.in {
				t.Errorf("Member(SplitMember(%q)) = %q", tt.in, Member(tg, id))
			}
		})
	}
}

// TestNewScriptsOnMiniredis runs the admission, reconciliation and pruning scripts on the
// embedded store, which has its own Lua and stream implementations.
func TestNewScriptsOnMiniredis(t *testing.T) {
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	s := New(c, "sb:")
	if err := s.Hints().EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, s, true, "a", 0, false)
	if st, at := admit(t, s, "a", 0, tag); st != ReadyOK || at == 0 {
		t.Fatalf("Ready = %q at %d", st, at)
	}
	_, at := admit(t, s, "b", 0, "")
	if r, err := s.Mailboxes().Enqueue(ctx, EnqueueReq{Tag: tag, Entry: Entry("b", nil), Now: ms(0), ConvKey: "k", AdmittedAt: at, Window: time.Minute}); err != nil || r.Status != StatusQueued {
		t.Fatalf("push = %+v, %v", r, err)
	}
	admit(t, s, "lost", 0, "")
	for _, id := range []string{"a", "b", "lost"} {
		backdate(t, s, Member(tag, id), ms(-time.Hour))
	}
	if n, err := s.Admissions().Reconcile(ctx, time.Minute, 10); err != nil || n != 1 {
		t.Errorf("Reconcile = %d, %v; want the lost admission", n, err)
	}
	hints, err := s.Hints().Read(ctx, "dead", 10, 0)
	if err != nil || len(hints) != 1 {
		t.Fatal(hints, err)
	}
	if _, err := s.Hints().PruneConsumers(ctx, "self", 0, 10); err != nil {
		t.Errorf("PruneConsumers = %v", err)
	}
}

func TestScriptReadyAndSettle(t *testing.T) {
	s := newStore(t)
	before := ms(0)
	st, at := admit(t, s, "a", 2, tag)
	if st != ReadyOK || at < before-time.Minute.Milliseconds() || at > ms(time.Minute) {
		t.Fatalf("Ready = %q at %d, want ok at about %d", st, at, before)
	}
	if st, _ := admit(t, s, "b", 2, ""); st != ReadyOK {
		t.Fatal(st)
	}
	if st, at := admit(t, s, "c", 2, ""); st != ReadyBusy || at != 0 {
		t.Fatalf("over the global limit = %q at %d", st, at)
	}
	if st, at, _ := s.Admissions().Ready(ctx, ReadyReq{Admit: AdmitForce, Member: Member(tag, "a")}); st != ReadyOK || at == 0 || pending(t, s) != 2 {
		t.Fatalf("forced admission of a counted run = %q at %d, pending %d; want ok and still 2", st, at, pending(t, s))
	}
	if st, _, _ := s.Admissions().Ready(ctx, ReadyReq{Admit: AdmitForce, Member: Member(tag, "r")}); st != ReadyOK || pending(t, s) != 3 {
		t.Fatalf("forced admission over the limit = %q, pending %d; want ok and 3", st, pending(t, s))
	}
	_ = s.Admissions().Pause(ctx)
	if st, _ := admit(t, s, "d", 0, tag); st != ReadyPaused {
		t.Fatalf("paused = %q", st)
	}
	_ = s.Admissions().Resume(ctx)
	if err := s.Hints().EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Hints().EnsureGroup(ctx); err != nil {
		t.Fatalf("EnsureGroup twice: %v", err)
	}
	hints, err := s.Hints().Read(ctx, "c1", 10, 0)
	if err != nil || len(hints) != 1 || hints[0].Tag != tag {
		t.Fatalf("Read = %+v, %v", hints, err)
	}
	done := []string{Member(tag, "a"), Member(tag, "b"), Member(tag, "r")}
	if err := s.Counters().Settle(ctx, Settlement{Done: done, Counters: map[string]int64{"answered": 2}, Hints: []string{"{conv:x}"}, Acks: []string{hints[0].ID}}); err != nil {
		t.Fatal(err)
	}
	if p := pending(t, s); p != 0 {
		t.Errorf("pending = %d", p)
	}
	if st, _ := s.Counters().Stats(ctx); st["answered"] != 2 {
		t.Errorf("stats = %v", st)
	}
	if n, _ := s.Client().XLen(ctx, s.Hints().ReadyKey()).Result(); n != 1 {
		t.Errorf("ready stream holds %d entries, want only the new hint", n)
	}
	if err := s.Counters().Settle(ctx, Settlement{Done: done}); err != nil {
		t.Fatalf("settling finished runs twice: %v", err)
	}
	if p := pending(t, s); p != 0 {
		t.Errorf("pending after settling twice = %d", p)
	}
	// A batch larger than one HDEL call takes.
	var many []string
	for i := range 1234 {
		id := fmt.Sprint("m", i)
		admit(t, s, id, 0, "")
		many = append(many, Member(tag, id))
	}
	if err := s.Counters().Settle(ctx, Settlement{Done: many}); err != nil || pending(t, s) != 0 {
		t.Errorf("settling %d runs: %v, pending %d", len(many), err, pending(t, s))
	}
}
