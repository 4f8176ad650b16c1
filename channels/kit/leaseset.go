package kit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Census counts the live processes sharing a set of leases, so that each takes its fair share
// (Discord's shards, Slack's Socket Mode connection slots). The wiring backs it with Redis, next
// to the Lease; MemoryLease implements it too. Implementations are safe for concurrent use.
type Census interface {
	// Attend marks owner alive in group for ttl and returns how many owners are alive now,
	// owner included.
	Attend(ctx context.Context, group, owner string, ttl time.Duration) (int, error)
	// Leave takes owner out of group at once.
	Leave(ctx context.Context, group, owner string) error
}

// LeaseSetOptions configure RunLeasedSet.
type LeaseSetOptions struct {
	Lease Lease
	// Census counts the processes sharing the set; default Lease when it implements Census.
	// Without one, every process takes whatever is free.
	Census Census
	// Group names the set among the processes (e.g. "discord:<bot id>:4"); Names are the
	// leases of its members, one each (e.g. "discord:<bot id>:0/4").
	Group string
	Names []string
	// Owner names this process; it must differ between processes.
	Owner string
	// TTL is each lease's lifetime without renewal, and how long this process counts as alive
	// in the census after its last attendance; default DefaultLeaseTTL.
	TTL time.Duration
	// Logger: default slog.Default().
	Logger *slog.Logger
	// OnChange, when set, is called with true when this process starts holding lease i (before
	// lead is called) and with false once lead has returned; it must return quickly.
	OnChange func(i int, held bool)
	// OnTakeover, when set, is called when this process takes lease i after having seen
	// another process hold it: a dead process's intake taken over, or one handed over.
	OnTakeover func(i int)
	// OnFirstRound, when set, is called once, after this process's first round of attempts,
	// with the members it took (none when the store did not answer, or when ctx ended first).
	OnFirstRound func(taken []int)
}

// RunLeasedSet shares the leases of a set among the processes that run it with the same Group
// and Names, and runs lead(ctx, i) for each lease i this process holds, until ctx ends; it
// returns once every lead has returned and its lease is released.
//
// Every TTL/5 each process attends the census and computes its share, ⌈len(Names) / live
// processes⌉: below it, it tries to take free leases (lowest first); above it (a process
// joined), it hands one back, so N processes with the same configuration split the set within
// a few rounds. A dead process stops attending and renewing: after about TTL its leases are
// free and its share is counted again, and the survivors take them. Each held lease is renewed
// as RunLeased renews one, and its lead is stopped at the first failed renewal; a lead handed
// back or stopped has returned before its lease is released, so the next holder starts after
// the last one stopped (a Discord shard's session saved by then, a Slack socket closed).
func RunLeasedSet(ctx context.Context, o LeaseSetOptions, lead func(ctx context.Context, i int)) {
	if o.TTL <= 0 {
		o.TTL = DefaultLeaseTTL
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Census == nil {
		o.Census, _ = o.Lease.(Census)
	}
	one := LeaseOptions{Lease: o.Lease, Owner: o.Owner, TTL: o.TTL}
	s := &leaseSet{o: o, one: one, lead: lead, retry: one.retryEvery(),
		log:   o.Logger.With("lease_set", o.Group, "owner", o.Owner),
		holds: make([]*setHold, len(o.Names)), sawOther: make([]bool, len(o.Names)), ended: make(chan int, len(o.Names))}
	defer s.close()
	first := true
	defer func() {
		// Stopped before its first round ended: say so, with nothing taken.
		if first && o.OnFirstRound != nil {
			o.OnFirstRound(nil)
		}
	}()
	for ctx.Err() == nil {
		s.drain()
		taken, stop := s.round(ctx)
		if stop {
			return
		}
		if first {
			first = false
			if o.OnFirstRound != nil {
				o.OnFirstRound(taken)
			}
		}
		select {
		case <-ctx.Done():
			return
		case i := <-s.ended:
			// Put it back for the drain, then go round at once: a lease lost or handed back may
			// be someone else's to take, or this process's again.
			s.ended <- i
			if Sleep(ctx, s.retry/4) != nil {
				return
			}
		case <-time.After(s.retry):
		}
	}
}

// leaseSet is one process's part in a set of leases (RunLeasedSet); only RunLeasedSet's
// goroutine touches it, but for ended and the leads' wait group.
type leaseSet struct {
	o     LeaseSetOptions
	one   LeaseOptions
	lead  func(ctx context.Context, i int)
	log   *slog.Logger
	retry time.Duration

	holds    []*setHold // the leases held, by index
	sawOther []bool     // lease i was seen held by another process
	ended    chan int   // the leads that returned
	wg       sync.WaitGroup

	failures int // store failures in a row
	logged   time.Time
}

// setHold is a lease of the set this process holds.
type setHold struct {
	cancel    context.CancelFunc
	releasing bool
}

// close stops every lead, waits for them and leaves the census.
func (s *leaseSet) close() {
	for _, h := range s.holds {
		if h != nil {
			h.cancel()
		}
	}
	s.wg.Wait()
	if s.o.Census != nil {
		lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.o.Census.Leave(lctx, s.o.Group, s.o.Owner); err != nil {
			s.log.Warn("intake lease set: leaving the census failed; the others count this process until it expires", "err", err)
		}
	}
}

// drain forgets the leads that ended by themselves (a renewal failed) or were handed back.
func (s *leaseSet) drain() {
	for {
		select {
		case i := <-s.ended:
			s.holds[i] = nil
		default:
			return
		}
	}
}

// round attends the census and takes free leases up to this process's share, or hands one back
// above it. It returns the leases taken; stop when ctx ended while a lease was being taken.
func (s *leaseSet) round(ctx context.Context) (taken []int, stop bool) {
	members, ok := s.attend(ctx)
	if !ok {
		return nil, false
	}
	n := len(s.o.Names)
	share := (n + members - 1) / members
	held := 0
	for _, h := range s.holds {
		if h != nil {
			held++
		}
	}
	if held > share {
		s.handBack(members, share)
		return nil, false
	}
	for i := 0; i < n && held < share && ctx.Err() == nil; i++ {
		if s.holds[i] != nil {
			continue
		}
		got, stop, failed := s.acquire(ctx, i)
		if stop {
			return taken, true
		}
		if failed {
			break
		}
		if got {
			taken = append(taken, i)
			held++
		}
	}
	return taken, false
}

// attend counts the live processes of the set (1 without a census); ok is false when the
// census did not answer.
func (s *leaseSet) attend(ctx context.Context) (members int, ok bool) {
	if s.o.Census == nil {
		return 1, true
	}
	actx, cancel := context.WithTimeout(ctx, s.retry)
	m, err := s.o.Census.Attend(actx, s.o.Group, s.o.Owner, s.o.TTL)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			s.storeFailed("census", err)
		}
		return 0, false
	}
	return max(m, 1), true
}

// handBack hands the highest held lease back, another process having joined; it takes it at
// its next round.
func (s *leaseSet) handBack(members, share int) {
	for i := len(s.holds) - 1; i >= 0; i-- {
		if h := s.holds[i]; h != nil && !h.releasing {
			h.releasing = true
			s.log.Info("intake lease set: handing a lease back to even the share out", "lease", s.o.Names[i], "processes", members, "share", share)
			h.cancel()
			return
		}
	}
}

// acquire tries to take lease i and starts its lead when it did (got). stop: ctx ended (the
// lease, if taken meanwhile, is released); failed: the store did not answer.
func (s *leaseSet) acquire(ctx context.Context, i int) (got, stop, failed bool) {
	began := time.Now()
	actx, cancel := context.WithTimeout(ctx, s.retry)
	got, err := s.o.Lease.TryAcquire(actx, s.o.Names[i], s.o.Owner, s.o.TTL)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			release(LeaseOptions{Lease: s.o.Lease, Name: s.o.Names[i], Owner: s.o.Owner}, s.log)
			return false, true, false
		}
		s.storeFailed("acquire", err)
		return false, false, true
	}
	if !got {
		s.sawOther[i] = true
		return false, false, false
	}
	if s.failures > 0 {
		s.log.Info("intake lease set: the store answers again", "failures", s.failures)
		s.failures = 0
	}
	if s.sawOther[i] && s.o.OnTakeover != nil {
		s.o.OnTakeover(i)
	}
	s.sawOther[i] = false
	s.start(ctx, i, began)
	return true, false, false
}

// start runs lease i's lead on its own goroutine, renewing the lease while it runs.
func (s *leaseSet) start(ctx context.Context, i int, began time.Time) {
	hctx, cancel := context.WithCancel(ctx)
	s.holds[i] = &setHold{cancel: cancel}
	oi := s.one
	oi.Name = s.o.Names[i]
	ilog := s.log.With("lease", oi.Name)
	ilog.Info("intake lease taken: this process takes the platform's events in", "ttl", s.o.TTL)
	if s.o.OnChange != nil {
		s.o.OnChange(i, true)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		holdLease(hctx, oi, ilog, began, func(ctx context.Context) { s.lead(ctx, i) })
		if s.o.OnChange != nil {
			s.o.OnChange(i, false)
		}
		s.ended <- i
	}()
}

// storeFailed logs a store failure, once per spell and then at most every leaseLogEvery.
func (s *leaseSet) storeFailed(what string, err error) {
	s.failures++
	if s.failures == 1 || time.Since(s.logged) >= leaseLogEvery {
		s.logged = time.Now()
		s.log.Warn("intake lease set: the store did not answer ("+what+"); taking nothing new", "err", err, "failures", s.failures)
	}
}

// Attend marks owner alive in group for ttl; it returns how many owners are alive.
func (m *MemoryLease) Attend(_ context.Context, group, owner string, ttl time.Duration) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.census == nil {
		m.census = map[string]map[string]time.Time{}
	}
	g := m.census[group]
	if g == nil {
		g = map[string]time.Time{}
		m.census[group] = g
	}
	now := time.Now()
	g[owner] = now.Add(ttl)
	alive := 0
	for o, until := range g {
		if now.Before(until) {
			alive++
		} else {
			delete(g, o)
		}
	}
	return alive, nil
}

// Leave takes owner out of group.
func (m *MemoryLease) Leave(_ context.Context, group, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.census[group], owner)
	return nil
}
