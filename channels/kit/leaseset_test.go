package kit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

// setHolders runs processes on one lease set and records who holds which member; it fails the
// test if two ever hold one member at once.
type setHolders struct {
	t         *testing.T
	mu        sync.Mutex
	holder    map[int]string
	takeovers map[string]int
}

func newSetHolders(t *testing.T) *setHolders {
	return &setHolders{t: t, holder: map[int]string{}, takeovers: map[string]int{}}
}

// run starts process owner on o; the returned function stops it (handing its leases back).
func (s *setHolders) run(o LeaseSetOptions, owner string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	o.Owner, o.Logger = owner, quietLog
	o.OnTakeover = func(int) {
		s.mu.Lock()
		s.takeovers[owner]++
		s.mu.Unlock()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunLeasedSet(ctx, o, func(ctx context.Context, i int) {
			s.mu.Lock()
			if other, ok := s.holder[i]; ok {
				s.t.Errorf("%s leads member %d while %s still does", owner, i, other)
			}
			s.holder[i] = owner
			s.mu.Unlock()
			<-ctx.Done()
			s.mu.Lock()
			delete(s.holder, i)
			s.mu.Unlock()
		})
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	s.t.Cleanup(stop)
	return stop
}

// count is how many members owner holds.
func (s *setHolders) count(owner string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, o := range s.holder {
		if o == owner {
			n++
		}
	}
	return n
}

func (s *setHolders) takeoversOf(owner string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.takeovers[owner]
}

// severable is a Lease and Census that can be cut off, as a process is from the others when it
// dies: from then on every call fails, so it neither renews nor releases nor attends.
type severable struct {
	m   *MemoryLease
	cut atomic.Bool
}

var errSevered = errors.New("severed")

func (s *severable) TryAcquire(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if s.cut.Load() {
		return false, errSevered
	}
	return s.m.TryAcquire(ctx, name, owner, ttl)
}

func (s *severable) Renew(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if s.cut.Load() {
		return false, errSevered
	}
	return s.m.Renew(ctx, name, owner, ttl)
}

func (s *severable) Release(ctx context.Context, name, owner string) error {
	if s.cut.Load() {
		return errSevered
	}
	return s.m.Release(ctx, name, owner)
}

func (s *severable) Attend(ctx context.Context, group, owner string, ttl time.Duration) (int, error) {
	if s.cut.Load() {
		return 0, errSevered
	}
	return s.m.Attend(ctx, group, owner, ttl)
}

func (s *severable) Leave(ctx context.Context, group, owner string) error {
	if s.cut.Load() {
		return errSevered
	}
	return s.m.Leave(ctx, group, owner)
}

func setOptions(l Lease, ttl time.Duration, n int) LeaseSetOptions {
	names := make([]string, n)
	for i := range names {
		names[i] = "shard:" + string(rune('0'+i))
	}
	return LeaseSetOptions{Lease: l, Group: "shards", Names: names, TTL: ttl}
}

// TestLeaseSetSplitsAmongProcesses proves processes on one lease set split it evenly: the
// first takes every member, a second joining gets half handed over within a few rounds, and a
// member is never held by two at once.
func TestLeaseSetSplitsAmongProcesses(t *testing.T) {
	mem := &MemoryLease{}
	s := newSetHolders(t)
	o := setOptions(mem, 500*time.Millisecond, 4)
	s.run(o, "a")
	poll.Until(t, "a to hold all four", func() bool { return s.count("a") == 4 })
	s.run(o, "b")
	poll.Until(t, "the set split two and two", func() bool { return s.count("a") == 2 && s.count("b") == 2 })
	if n := s.takeoversOf("b"); n != 2 {
		t.Errorf("b counted %d takeovers, want the 2 members a handed over", n)
	}
}

// TestLeaseSetUnevenShare proves three members on two processes go two and one, and one member
// on two processes stays with one of them while the other stands by.
func TestLeaseSetUnevenShare(t *testing.T) {
	for _, tc := range []struct{ members, a, b int }{{3, 2, 1}, {1, 1, 0}} {
		mem := &MemoryLease{}
		s := newSetHolders(t)
		o := setOptions(mem, 500*time.Millisecond, tc.members)
		stopA := s.run(o, "a")
		poll.Until(t, "a to hold every member", func() bool { return s.count("a") == tc.members })
		stopB := s.run(o, "b")
		poll.Until(t, "the uneven split", func() bool { return s.count("a") == tc.a && s.count("b") == tc.b })
		stopA()
		stopB()
	}
}

// TestLeaseSetDeadProcessTakenOver proves a process cut off without handing back (it no longer
// renews, releases or attends) loses its members to the survivor once their leases expire,
// within about a TTL and a round, never before they expire.
func TestLeaseSetDeadProcessTakenOver(t *testing.T) {
	mem := &MemoryLease{}
	dying := &severable{m: mem}
	s := newSetHolders(t)
	ttl := 600 * time.Millisecond
	s.run(setOptions(dying, ttl, 2), "a")
	poll.Until(t, "a to hold both", func() bool { return s.count("a") == 2 })
	s.run(setOptions(mem, ttl, 2), "b")
	poll.Until(t, "one each", func() bool { return s.count("a") == 1 && s.count("b") == 1 })
	dead := time.Now()
	dying.cut.Store(true)
	poll.Until(t, "b to hold both", func() bool { return s.count("b") == 2 })
	took := time.Since(dead)
	t.Logf("taken over %v after the cut (ttl %v)", took.Round(time.Millisecond), ttl)
	if took > 2*ttl+ttl/5 {
		t.Errorf("taken over after %v, want within a TTL and a round or so (%v)", took, 2*ttl)
	}
	if mem.Holder("shard:0") != "b" || mem.Holder("shard:1") != "b" {
		t.Errorf("holders %q and %q, want b for both", mem.Holder("shard:0"), mem.Holder("shard:1"))
	}
	if n := s.takeoversOf("b"); n != 2 {
		t.Errorf("b counted %d takeovers, want 2 (the handed-over member and the dead one's)", n)
	}
}

// TestLeaseSetStopHandsBackAtOnce proves a process that stops releases its leases and leaves
// the census, so the other takes them over at its next round, long before they would expire.
func TestLeaseSetStopHandsBackAtOnce(t *testing.T) {
	mem := &MemoryLease{}
	s := newSetHolders(t)
	ttl := 5 * time.Second
	o := setOptions(mem, ttl, 2)
	stopA := s.run(o, "a")
	poll.Until(t, "a to hold both", func() bool { return s.count("a") == 2 })
	s.run(o, "b")
	poll.Until(t, "one each", func() bool { return s.count("a") == 1 && s.count("b") == 1 })
	began := time.Now()
	stopA()
	if h := mem.Holder("shard:0") + mem.Holder("shard:1"); h != "b" {
		t.Errorf("after a stopped the holders are %q, want only b", h)
	}
	poll.Until(t, "b to hold both", func() bool { return s.count("b") == 2 })
	if took := time.Since(began); took > ttl/5+ttl/5 {
		t.Errorf("b took over %v after the stop, want within about a round (%v)", took, ttl/5)
	}
}

// TestLeaseSetStoppedBeforeItsFirstRound proves a set stopped before its first round still
// reports the round, with nothing taken, so a Start waiting on it does not hang.
func TestLeaseSetStoppedBeforeItsFirstRound(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := setOptions(&MemoryLease{}, time.Second, 2)
	var rounds [][]int
	o.OnFirstRound = func(taken []int) { rounds = append(rounds, taken) }
	RunLeasedSet(ctx, o, func(context.Context, int) { t.Error("a lead ran on a stopped set") })
	if len(rounds) != 1 || len(rounds[0]) != 0 {
		t.Errorf("first rounds reported: %v, want one with nothing taken", rounds)
	}
}
