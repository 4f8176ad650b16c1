package kit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"
)

// Lease is a named, time-limited hold shared by every process of a deployment, for an intake
// the platform allows only once (Telegram long polling, a Discord shard, Slack's Socket Mode
// connection budget): the one process holding it takes the platform's events in; the others
// stand by and keep working the queue. The wiring backs it with Redis; adapters know nothing of
// Redis. owner names the calling process and must differ between processes. Implementations
// are safe for concurrent use.
type Lease interface {
	// TryAcquire takes the lease for ttl if nobody holds it, or extends it if owner already
	// does; it reports whether owner holds it now.
	TryAcquire(ctx context.Context, name, owner string, ttl time.Duration) (bool, error)
	// Renew extends owner's hold to ttl from now; false means owner no longer holds it (it
	// expired, and maybe another process took it).
	Renew(ctx context.Context, name, owner string, ttl time.Duration) (bool, error)
	// Release gives the lease up if owner holds it, so a standby can take it at its next try;
	// it does nothing otherwise.
	Release(ctx context.Context, name, owner string) error
}

// NewOwner names a process that was given no owner name (the adapters' Config.LeaseOwner
// default): 16 random hex digits, so that two processes do not share one.
func NewOwner() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// DefaultLeaseTTL is how long an intake lease lasts without renewal: a process that dies
// unannounced (kill -9, a lost host) is replaced within about this long plus a standby's retry.
const DefaultLeaseTTL = 10 * time.Second

// LeaseOptions configure RunLeased.
type LeaseOptions struct {
	Lease Lease
	// Name is the intake the lease guards, e.g. "telegram:<bot id>".
	Name string
	// Owner names this process; it must differ between processes.
	Owner string
	// TTL is the lease's lifetime without renewal; default DefaultLeaseTTL. The holder renews
	// every 3/10 of it and a standby tries to take it every 1/5 (3 s and 2 s by default).
	TTL time.Duration
	// Logger receives one line when this process starts or stops holding the lease and about
	// spells of store failures; default slog.Default().
	Logger *slog.Logger
	// OnChange, when set, is called with true when this process starts leading (before lead is
	// called) and with false once lead has returned; it must return quickly.
	OnChange func(held bool)
	// OnTakeover, when set, is called when this process takes the lease after having seen
	// another process hold it (it died, or handed it over); it must return quickly.
	OnTakeover func()
}

func (o LeaseOptions) renewEvery() time.Duration { return o.TTL * 3 / 10 }
func (o LeaseOptions) retryEvery() time.Duration { return o.TTL / 5 }

// leaseLogEvery is the least time between two lines about one spell of store failures.
const leaseLogEvery = 5 * time.Second

// RunLeased runs lead while this process holds the lease, until ctx ends; it returns once lead
// has returned and the lease is released. It tries to take the lease at once and then every
// TTL/5 while another process holds it; holding it, it renews every 3·TTL/10. The first renewal
// that fails — the lease was lost, the store did not answer, or answered too late — cancels
// lead's context at once, well before the lease could expire and pass to another process, so
// two processes never lead together as long as lead stops promptly when its context ends. A
// lead that returns by itself gives the lease up. lead must return once its context ends.
func RunLeased(ctx context.Context, o LeaseOptions, lead func(ctx context.Context)) {
	if o.TTL <= 0 {
		o.TTL = DefaultLeaseTTL
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.OnChange == nil {
		o.OnChange = func(bool) {}
	}
	log := o.Logger.With("lease", o.Name, "owner", o.Owner)
	failures := 0
	var logged time.Time
	standing, sawOther := false, false
	for ctx.Err() == nil {
		began := time.Now()
		actx, cancel := context.WithTimeout(ctx, o.retryEvery())
		held, err := o.Lease.TryAcquire(actx, o.Name, o.Owner, o.TTL)
		cancel()
		if err != nil && ctx.Err() != nil {
			// Stopped mid-try: the store may have granted the lease all the same; give it back
			// rather than leave it to expire.
			release(o, log)
			return
		}
		switch {
		case err != nil:
			failures++
			if failures == 1 || time.Since(logged) >= leaseLogEvery {
				logged = time.Now()
				log.Warn("intake lease: the store did not answer; standing by", "err", err, "failures", failures)
			}
		case err == nil && held:
			if failures > 0 {
				log.Info("intake lease: the store answers again", "failures", failures)
			}
			failures, standing = 0, false
			if sawOther && o.OnTakeover != nil {
				o.OnTakeover()
			}
			sawOther = false
			log.Info("intake lease taken: this process takes the platform's events in", "ttl", o.TTL)
			o.OnChange(true)
			holdLease(ctx, o, log, began, lead)
			o.OnChange(false)
		case err == nil:
			if failures > 0 {
				log.Info("intake lease: the store answers again", "failures", failures)
			}
			failures, sawOther = 0, true
			if !standing {
				standing = true
				log.Info("intake lease held by another process: standing by", "retry_every", o.retryEvery())
			}
		}
		if Sleep(ctx, o.retryEvery()) != nil {
			return
		}
	}
}

// holdLease runs lead under the lease taken at acquired, renewing it, until ctx ends, a renewal
// fails or lead returns; then it releases the lease.
func holdLease(ctx context.Context, o LeaseOptions, log *slog.Logger, acquired time.Time, lead func(context.Context)) {
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	done := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(done)
		lead(lctx)
	}()
	end := func(why string, err error) {
		stop()
		wg.Wait()
		release(o, log)
		if why != "" {
			log.Warn("intake lease: "+why+"; stopped taking events in", "err", err)
		} else {
			log.Info("intake lease released")
		}
	}
	// expires is when the lease lapses at the latest: TTL after the start of the last successful
	// acquire or renew (the store starts the clock later than that).
	expires := acquired.Add(o.TTL)
	tick := time.NewTicker(o.renewEvery())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			end("", nil)
			return
		case <-done:
			end("", nil)
			return
		case <-tick.C:
		}
		began := time.Now()
		// A renewal answered later than this leaves lead too little time to stop before the
		// lease could lapse.
		rctx, cancel := context.WithDeadline(ctx, expires.Add(-o.renewEvery()))
		ok, err := o.Lease.Renew(rctx, o.Name, o.Owner, o.TTL)
		cancel()
		switch {
		case ctx.Err() != nil:
			end("", nil)
			return
		case err != nil:
			end("renewing failed", err)
			return
		case !ok:
			end("lost (it expired before it was renewed)", nil)
			return
		}
		expires = began.Add(o.TTL)
	}
}

// release gives the lease up with a context of its own: the caller's has usually ended.
func release(o LeaseOptions, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := o.Lease.Release(ctx, o.Name, o.Owner); err != nil {
		log.Warn("intake lease: releasing failed; another process takes over once it expires", "err", err, "ttl", o.TTL)
	}
}

// Sleep waits d, or until ctx ends (then it returns ctx's error); d ≤ 0 returns at once. It is
// the wait of every adapter's retry and backoff.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// MemoryLease is a Lease in memory, shared by the channels of one process: for tests, and for
// processes that share nothing. The zero value is ready to use.
type MemoryLease struct {
	mu     sync.Mutex
	holder map[string]memoryHold
	census map[string]map[string]time.Time // group → owner → alive until
}

type memoryHold struct {
	owner   string
	expires time.Time
}

// TryAcquire takes name for owner unless another owner holds it unexpired.
func (m *MemoryLease) TryAcquire(_ context.Context, name, owner string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.holder == nil {
		m.holder = map[string]memoryHold{}
	}
	now := time.Now()
	if h, ok := m.holder[name]; ok && h.owner != owner && now.Before(h.expires) {
		return false, nil
	}
	m.holder[name] = memoryHold{owner: owner, expires: now.Add(ttl)}
	return true, nil
}

// Renew extends owner's unexpired hold on name.
func (m *MemoryLease) Renew(_ context.Context, name, owner string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if h, ok := m.holder[name]; !ok || h.owner != owner || !now.Before(h.expires) {
		return false, nil
	}
	m.holder[name] = memoryHold{owner: owner, expires: now.Add(ttl)}
	return true, nil
}

// Release drops owner's hold on name.
func (m *MemoryLease) Release(_ context.Context, name, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.holder[name]; ok && h.owner == owner {
		delete(m.holder, name)
	}
	return nil
}

// Holder is who holds name now, "" when nobody does.
func (m *MemoryLease) Holder(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.holder[name]; ok && time.Now().Before(h.expires) {
		return h.owner
	}
	return ""
}
