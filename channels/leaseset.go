package channels

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
	log := o.Logger.With("lease_set", o.Group, "owner", o.Owner)
	one := LeaseOptions{Lease: o.Lease, Owner: o.Owner, TTL: o.TTL}
	retry := one.retryEvery()
	n := len(o.Names)

	type hold struct {
		cancel    context.CancelFunc
		releasing bool
	}
	holds := make([]*hold, n) // only this goroutine touches it
	sawOther := make([]bool, n)
	ended := make(chan int, n)
	var wg sync.WaitGroup
	defer func() {
		for _, h := range holds {
			if h != nil {
				h.cancel()
			}
		}
		wg.Wait()
		if o.Census != nil {
			lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := o.Census.Leave(lctx, o.Group, o.Owner); err != nil {
				log.Warn("intake lease set: leaving the census failed; the others count this process until it expires", "err", err)
			}
		}
	}()
	start := func(i int, began time.Time) {
		hctx, cancel := context.WithCancel(ctx)
		holds[i] = &hold{cancel: cancel}
		oi := one
		oi.Name = o.Names[i]
		ilog := log.With("lease", oi.Name)
		ilog.Info("intake lease taken: this process takes the platform's events in", "ttl", o.TTL)
		if o.OnChange != nil {
			o.OnChange(i, true)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			holdLease(hctx, oi, ilog, began, func(ctx context.Context) { lead(ctx, i) })
			if o.OnChange != nil {
				o.OnChange(i, false)
			}
			ended <- i
		}()
	}

	first := true
	defer func() {
		// Stopped before its first round ended: say so, with nothing taken.
		if first && o.OnFirstRound != nil {
			o.OnFirstRound(nil)
		}
	}()
	failures := 0
	var logged time.Time
	storeFailed := func(what string, err error) {
		failures++
		if failures == 1 || time.Since(logged) >= leaseLogEvery {
			logged = time.Now()
			log.Warn("intake lease set: the store did not answer ("+what+"); taking nothing new", "err", err, "failures", failures)
		}
	}
	for ctx.Err() == nil {
		// Collect the leads that ended by themselves (a renewal failed) or were handed back.
	drain:
		for {
			select {
			case i := <-ended:
				holds[i] = nil
			default:
				break drain
			}
		}
		members := 1
		var taken []int
		ok := true
		if o.Census != nil {
			actx, cancel := context.WithTimeout(ctx, retry)
			m, err := o.Census.Attend(actx, o.Group, o.Owner, o.TTL)
			cancel()
			if err != nil {
				ok = false
				if ctx.Err() == nil {
					storeFailed("census", err)
				}
			} else {
				members = max(m, 1)
			}
		}
		share := (n + members - 1) / members
		held := 0
		for _, h := range holds {
			if h != nil {
				held++
			}
		}
		switch {
		case !ok:
		case held > share:
			// Another process joined: hand the highest held lease back; it takes it at its
			// next round.
			for i := n - 1; i >= 0; i-- {
				if h := holds[i]; h != nil && !h.releasing {
					h.releasing = true
					log.Info("intake lease set: handing a lease back to even the share out", "lease", o.Names[i], "processes", members, "share", share)
					h.cancel()
					break
				}
			}
		default:
			for i := 0; i < n && held < share && ctx.Err() == nil; i++ {
				if holds[i] != nil {
					continue
				}
				began := time.Now()
				actx, cancel := context.WithTimeout(ctx, retry)
				got, err := o.Lease.TryAcquire(actx, o.Names[i], o.Owner, o.TTL)
				cancel()
				if err != nil {
					if ctx.Err() != nil {
						release(LeaseOptions{Lease: o.Lease, Name: o.Names[i], Owner: o.Owner}, log)
						return
					}
					storeFailed("acquire", err)
					break
				}
				if !got {
					sawOther[i] = true
					continue
				}
				if failures > 0 {
					log.Info("intake lease set: the store answers again", "failures", failures)
					failures = 0
				}
				if sawOther[i] && o.OnTakeover != nil {
					o.OnTakeover(i)
				}
				sawOther[i] = false
				start(i, began)
				taken = append(taken, i)
				held++
			}
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
		case i := <-ended:
			// Put it back for the drain above, then go round at once: a lease lost or handed
			// back may be someone else's to take, or this process's again.
			ended <- i
			if Sleep(ctx, retry/4) != nil {
				return
			}
		case <-time.After(retry):
		}
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
