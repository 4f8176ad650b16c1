package kit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

// leaders runs processes under one lease and records who leads when; it fails the test if two
// ever lead at once.
type leaders struct {
	t      *testing.T
	mu     sync.Mutex
	active map[string]bool
	starts map[string][]time.Time
	ends   map[string][]time.Time
	wg     sync.WaitGroup
}

func newLeaders(t *testing.T) *leaders {
	return &leaders{t: t, active: map[string]bool{}, starts: map[string][]time.Time{}, ends: map[string][]time.Time{}}
}

// run starts a process named owner under o (Owner set to owner); cancel ends it.
func (l *leaders) run(o LeaseOptions, owner string) (cancel func()) {
	ctx, cancelCtx := context.WithCancel(context.Background())
	o.Owner, o.Logger = owner, quietLog
	l.wg.Add(1)
	done := make(chan struct{})
	go func() {
		defer l.wg.Done()
		defer close(done)
		RunLeased(ctx, o, func(ctx context.Context) {
			l.mu.Lock()
			for other, on := range l.active {
				if on {
					l.t.Errorf("%s leads while %s still does", owner, other)
				}
			}
			l.active[owner] = true
			l.starts[owner] = append(l.starts[owner], time.Now())
			l.mu.Unlock()
			<-ctx.Done()
			l.mu.Lock()
			l.active[owner] = false
			l.ends[owner] = append(l.ends[owner], time.Now())
			l.mu.Unlock()
		})
	}()
	l.t.Cleanup(func() { cancelCtx(); <-done })
	return func() { cancelCtx(); <-done }
}

func (l *leaders) leading() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for who, on := range l.active {
		if on {
			return who
		}
	}
	return ""
}

func (l *leaders) startsOf(owner string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.starts[owner]...)
}

func (l *leaders) endsOf(owner string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.ends[owner]...)
}

// TestLeaseOneLeaderReleasedOnStop: of two processes on one lease exactly one leads; when it
// stops it releases the lease, and the standby takes over at its next try, well within a TTL.
func TestLeaseOneLeaderReleasedOnStop(t *testing.T) {
	// Long enough that a takeover by expiry (at least 2 s − 0.6 s after a's last renewal) is
	// told apart from one by release (within a standby retry, 0.4 s).
	const ttl = 2 * time.Second
	lease := &flakyLease{}
	o := LeaseOptions{Lease: lease, Name: "test:1", TTL: ttl}
	l := newLeaders(t)
	var changes atomic.Int32
	o.OnChange = func(bool) { changes.Add(1) }
	stopA := l.run(o, "a")
	poll.Until(t, "a to lead", func() bool { return l.leading() == "a" })
	l.run(o, "b")
	poll.Until(t, "b to try the lease twice", func() bool { return lease.tries.Load() >= 2 })
	if who := l.leading(); who != "a" || len(l.startsOf("b")) != 0 {
		t.Fatalf("leading %q (b led %d times), want a alone", who, len(l.startsOf("b")))
	}
	stopA()
	stopped := time.Now()
	poll.Until(t, "b to take over", func() bool { return l.leading() == "b" })
	took := l.startsOf("b")[0].Sub(stopped)
	t.Logf("handed over %v after the leader stopped (standby retries every %v)", took, o.retryEvery())
	if took > time.Second {
		t.Errorf("b took over %v after a stopped, want within one standby retry (%v): Stop must release", took, o.retryEvery())
	}
	if changes.Load() != 3 { // a on, a off, b on
		t.Errorf("OnChange called %d times, want 3", changes.Load())
	}
}

// flakyLease fails every call of a's while failing is set (a cannot reach the store), and
// counts b's tries.
type flakyLease struct {
	MemoryLease
	failing atomic.Bool
	tries   atomic.Int32
}

func (f *flakyLease) TryAcquire(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if owner == "b" {
		f.tries.Add(1)
	}
	if f.failing.Load() && owner == "a" {
		return false, errors.New("store unreachable")
	}
	return f.MemoryLease.TryAcquire(ctx, name, owner, ttl)
}

func (f *flakyLease) Renew(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if f.failing.Load() && owner == "a" {
		return false, errors.New("store unreachable")
	}
	return f.MemoryLease.Renew(ctx, name, owner, ttl)
}

func (f *flakyLease) Release(ctx context.Context, name, owner string) error {
	if f.failing.Load() && owner == "a" {
		return errors.New("store unreachable")
	}
	return f.MemoryLease.Release(ctx, name, owner)
}

// TestLeaseRenewalFailureStopsTheLeaderBeforeTheLeaseCanPass: a leader whose renewal fails stops
// leading at once — before its lease expires, so before the standby can take it — and the
// standby takes over once the lease has expired, within two TTLs of the failure.
func TestLeaseRenewalFailureStopsTheLeaderBeforeTheLeaseCanPass(t *testing.T) {
	const ttl = 500 * time.Millisecond
	lease := &flakyLease{}
	o := LeaseOptions{Lease: lease, Name: "test:2", TTL: ttl}
	l := newLeaders(t)
	l.run(o, "a")
	poll.Until(t, "a to lead", func() bool { return l.leading() == "a" })
	l.run(o, "b")
	lease.failing.Store(true)
	failed := time.Now()
	poll.Until(t, "b to take over", func() bool { return l.leading() == "b" })
	aEnd, bStart := l.endsOf("a")[0], l.startsOf("b")[0]
	if !aEnd.Before(bStart) {
		t.Fatalf("a stopped at %v, after b began at %v", aEnd, bStart)
	}
	if took := bStart.Sub(failed); took > 2*ttl {
		t.Errorf("b took over %v after a's renewals began failing, want within two TTLs (%v)", took, 2*ttl)
	}
	t.Logf("a stopped %v after its renewals began failing; b took over after %v", aEnd.Sub(failed), bStart.Sub(failed))
}

// TestLeaseAbandonedHolderIsReplacedAfterItExpires: a lease whose holder vanished without
// releasing it (a killed process) is taken by a standby once it expires, and not before.
func TestLeaseAbandonedHolderIsReplacedAfterItExpires(t *testing.T) {
	const ttl = 500 * time.Millisecond
	lease := &MemoryLease{}
	ok, err := lease.TryAcquire(context.Background(), "test:3", "ghost", ttl)
	if !ok || err != nil {
		t.Fatalf("TryAcquire = %v, %v", ok, err)
	}
	abandoned := time.Now()
	l := newLeaders(t)
	var takeovers atomic.Int32
	l.run(LeaseOptions{Lease: lease, Name: "test:3", TTL: ttl, OnTakeover: func() { takeovers.Add(1) }}, "b")
	poll.Until(t, "b to take over", func() bool { return l.leading() == "b" })
	took := l.startsOf("b")[0].Sub(abandoned)
	if took < ttl || took > 2*ttl {
		t.Errorf("b took over %v after the holder vanished, want between one and two TTLs (%v)", took, ttl)
	}
	if n := takeovers.Load(); n != 1 {
		t.Errorf("OnTakeover called %d times, want once", n)
	}
}

// TestMemoryLeaseCompareAndSet: only the holder renews or releases; an expired lease goes to
// whoever asks.
func TestMemoryLeaseCompareAndSet(t *testing.T) {
	ctx := context.Background()
	m := &MemoryLease{}
	steps := []struct {
		name string
		do   func() (bool, error)
		want bool
	}{
		{"a takes it", func() (bool, error) { return m.TryAcquire(ctx, "n", "a", time.Hour) }, true},
		{"b cannot", func() (bool, error) { return m.TryAcquire(ctx, "n", "b", time.Hour) }, false},
		{"a takes it again (extends)", func() (bool, error) { return m.TryAcquire(ctx, "n", "a", time.Hour) }, true},
		{"b cannot renew", func() (bool, error) { return m.Renew(ctx, "n", "b", time.Hour) }, false},
		{"b's release does nothing", func() (bool, error) { return m.Holder("n") == "a", m.Release(ctx, "n", "b") }, true},
		{"a renews", func() (bool, error) { return m.Renew(ctx, "n", "a", time.Millisecond) }, true},
		{"expired: a cannot renew", func() (bool, error) {
			poll.Until(t, "the lease to expire", func() bool { return m.Holder("n") == "" })
			return m.Renew(ctx, "n", "a", time.Hour)
		}, false},
		{"expired: b takes it", func() (bool, error) { return m.TryAcquire(ctx, "n", "b", time.Hour) }, true},
		{"b releases", func() (bool, error) { return m.Holder("n") == "", m.Release(ctx, "n", "b") }, false},
	}
	for _, s := range steps {
		got, err := s.do()
		if err != nil || got != s.want {
			t.Fatalf("%s: %v, %v; want %v", s.name, got, err, s.want)
		}
	}
	if h := m.Holder("n"); h != "" {
		t.Fatalf("holder after release = %q", h)
	}
}

// slowGrant grants the lease but answers only once the caller gives up waiting.
type slowGrant struct {
	MemoryLease
	asked chan struct{}
}

func (s *slowGrant) TryAcquire(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	_, _ = s.MemoryLease.TryAcquire(ctx, name, owner, ttl)
	close(s.asked)
	<-ctx.Done()
	return false, ctx.Err()
}

// TestLeaseStoppedMidTryGivesTheLeaseBack: a process stopped while its try is unanswered — the
// store may have granted the lease — gives it back instead of leaving it to expire.
func TestLeaseStoppedMidTryGivesTheLeaseBack(t *testing.T) {
	lease := &slowGrant{asked: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunLeased(ctx, LeaseOptions{Lease: lease, Name: "test:4", Owner: "a", TTL: time.Minute, Logger: quietLog},
			func(context.Context) { t.Error("led without an answer from the store") })
	}()
	<-lease.asked
	if h := lease.Holder("test:4"); h != "a" {
		t.Fatalf("holder %q, want the store to have granted a", h)
	}
	cancel()
	<-done
	if h := lease.Holder("test:4"); h != "" {
		t.Fatalf("holder %q after a stop mid-try, want the lease given back", h)
	}
}

// TestNewOwnerNamesEachProcessApart proves the default owner name: 16 hex digits, a new one
// each time.
func TestNewOwnerNamesEachProcessApart(t *testing.T) {
	a, b := NewOwner(), NewOwner()
	if len(a) != 16 || strings.Trim(a, "0123456789abcdef") != "" || a == b {
		t.Fatalf("NewOwner gave %q and %q, want two different names of 16 hex digits", a, b)
	}
}
