package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

// OffsetStore keeps the polling offset — the id of the next update to receive — across restarts,
// so a restart neither replays nor skips updates. The wiring backs it with Redis; adapters know
// nothing of Redis.
type OffsetStore interface {
	// LoadOffset returns the saved offset, or 0 when none was saved.
	LoadOffset(ctx context.Context) (int64, error)
	// SaveOffset records offset; every update below it has been handed to the Handler.
	SaveOffset(ctx context.Context, offset int64) error
}

// MemoryOffsets is an OffsetStore in memory, for tests and single-run processes. The zero
// value is ready to use.
type MemoryOffsets struct {
	mu     sync.Mutex
	offset int64
	saves  int
}

// LoadOffset returns the last saved offset.
func (m *MemoryOffsets) LoadOffset(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offset, nil
}

// SaveOffset records offset.
func (m *MemoryOffsets) SaveOffset(_ context.Context, offset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.offset = offset
	m.saves++
	return nil
}

// poller is polling mode's intake: the poll loop (run), under a polling lease when one is
// configured (leased), and what Ready reads of it.
type poller struct {
	cfg        *Config
	api        *botAPI
	clock      *kit.Clock
	dispatcher *dispatcher
	timeout    time.Duration // the long poll's (Config.PollTimeout)
	polled     kit.Liveness  // the last successful getUpdates, or when this process took the lease
	leading    atomic.Bool   // this process holds the polling lease (Config.Lease set)
}

// leased polls while this process holds the lease, each time from the offset saved in
// Offsets: another process may have moved it on since.
func (p *poller) leased(ctx context.Context, self botIdentity) {
	kit.RunLeased(ctx, kit.LeaseOptions{
		Lease:      p.cfg.Lease,
		Name:       platform + ":" + strconv.FormatInt(self.id, 10),
		Owner:      p.cfg.LeaseOwner,
		TTL:        p.cfg.LeaseTTL,
		Logger:     p.cfg.Logger,
		OnChange:   p.onLease,
		OnTakeover: p.cfg.OnTakeover,
	}, func(ctx context.Context) {
		offset, ok := p.loadOffset(ctx)
		if !ok {
			return
		}
		p.cfg.Logger.Info("telegram: polling", "bot", self.username, "offset", offset)
		p.run(ctx, offset)
	})
}

func (p *poller) onLease(held bool) {
	if held {
		p.polled.Beat(p.clock.Now()) // Ready counts from when this process took the lease
	}
	p.leading.Store(held)
	if p.cfg.OnLease != nil {
		p.cfg.OnLease(held)
	}
}

// loadOffset reads the saved offset, retrying with backoff until ctx ends (ok false then).
func (p *poller) loadOffset(ctx context.Context) (offset int64, ok bool) {
	for n := 1; ; n++ {
		offset, err := p.cfg.Offsets.LoadOffset(ctx)
		if err == nil {
			return offset, true
		}
		if ctx.Err() != nil {
			return 0, false
		}
		if n == 1 {
			p.cfg.Logger.Warn("telegram: loading the update offset failed; retrying before polling", "err", err)
		}
		if p.clock.Sleep(ctx, backoff(n)) != nil {
			return 0, false
		}
	}
}

// ready is Ready's word on polling: a getUpdates succeeded within the last two poll timeouts
// (plus 10 s), counted with a Lease from when this process took it; a process standing by
// (another one polls) is ready.
func (p *poller) ready() error {
	if p.cfg.Lease != nil && !p.leading.Load() {
		return nil
	}
	quiet, ok := p.polled.Quiet(p.clock.Now())
	if !ok {
		return fmt.Errorf("%w: no successful getUpdates yet", ErrNotReady)
	}
	if quiet > 2*p.timeout+10*time.Second {
		return fmt.Errorf("%w: last successful getUpdates %s ago", ErrNotReady, quiet.Round(time.Second))
	}
	return nil
}

// refusalMaxWait caps the backoff after a batch the Handler refused; failureLogEvery is the
// least time between two lines about one spell of polling failures.
const (
	refusalMaxWait = time.Second
	// refusedWait is the wait between two getUpdates while Telegram refuses the token (401).
	refusedWait     = 30 * time.Second
	failureLogEvery = 5 * time.Second
)

// allowedUpdates are the update kinds the bot asks for.
const allowedUpdates = `["message","callback_query"]`

// run is the inbound loop of polling mode: long polls from offset, hands each batch to the
// Handler with handleBatch (conversations concurrently, each in order), and saves the offset once
// the batch is done. With an Inbox, each batch is instead kept there in one write and confirmed by
// the next poll at once, while the hand-over follows from memory (see intake). A Handler error
// holds the offset at the earliest update not handed over and the loop polls again after a backoff
// (100 ms doubling up to refusalMaxWait, 1 s), so that update and its conversation's later ones
// are retried. Errors of getUpdates back off from 100 ms to 30 s; a 429 waits retry_after; a 409
// Conflict (another process polls the bot, or a webhook is set) backs off from 1 s to 30 s
// (conflictWait) and is logged once per spell, saying what to do. Other spells of failures are
// logged once and then every failureLogEvery, not per retry. A batch that ends in an update whose
// id cannot be read is polled again at once only while that moves the offset on: a batch that
// moved nothing, or a second such batch in a row, backs off too (see blindWait), so an unreadable
// update never makes a busy loop.
func (p *poller) run(ctx context.Context, offset int64) {
	sp := &pollSpell{p: p}
	var in *intake
	if p.cfg.Inbox != nil {
		in = p.startIntake(ctx)
		defer in.stop()
		var ok bool
		if offset, ok = in.resume(ctx, offset); !ok {
			return
		}
	}
	timeout := strconv.Itoa(max(1, int(p.timeout/time.Second)))
	for ctx.Err() == nil {
		params := tgbotapi.Params{"timeout": timeout, "limit": "100", "allowed_updates": allowedUpdates}
		if offset > 0 {
			params["offset"] = strconv.FormatInt(offset, 10)
		}
		batch, err := p.fetchUpdates(ctx, params)
		if err != nil {
			if ctx.Err() != nil || !sp.fetchFailed(ctx, err) {
				return
			}
			continue
		}
		p.polled.Beat(p.clock.Now())
		p.api.tokenAccepted()
		var next int64
		var herr error
		if in != nil {
			next, herr = in.take(ctx, batch, offset)
		} else {
			next, herr = p.dispatcher.handleBatch(ctx, batch, offset)
		}
		moved := next != offset
		if moved {
			offset = next
			if in == nil {
				p.saveOffset(offset)
			}
		}
		if herr != nil {
			// The Handler refused (its store is unreachable, say): poll again soon, so that the
			// updates held back are handed over within refusalMaxWait of its coming back.
			if ctx.Err() != nil || !sp.fail(ctx, herr, min(backoff(sp.failures+1), refusalMaxWait)) {
				return
			}
			continue
		}
		sp.recovered()
		if !sp.blindPause(ctx, batch, moved, offset) {
			return
		}
	}
}

// pollSpell is the poll loop's state across a spell of failures: how many in a row, when one
// was last logged, whether a 409 was, and how many blind batches came in a row.
type pollSpell struct {
	p          *poller
	failures   int
	logged     time.Time
	conflicted bool // a 409 of this spell was logged
	blind      int
}

// fail counts a failure and waits wait (backoff by failures when 0), logging the spell's first
// and then one each failureLogEvery, not one per retry. It reports false when ctx ended.
func (sp *pollSpell) fail(ctx context.Context, err error, wait time.Duration) bool {
	p := sp.p
	sp.failures++
	if wait <= 0 {
		wait = backoff(sp.failures)
	}
	if now := p.clock.Now(); sp.failures == 1 || now.Sub(sp.logged) >= failureLogEvery {
		sp.logged = now
		p.cfg.Logger.Warn("telegram: polling failed; backing off", "err", err, "wait", wait, "failures", sp.failures)
	}
	return p.clock.Sleep(ctx, wait) == nil
}

// fetchFailed waits after a failed getUpdates as its error asks: a 409 Conflict, a refused
// token (401), a 429 (retry_after), anything else (backoff). It reports false when ctx ended.
func (sp *pollSpell) fetchFailed(ctx context.Context, err error) bool {
	p := sp.p
	switch {
	case errors.Is(err, ErrConflict):
		sp.failures++
		wait := conflictWait(sp.failures)
		if !sp.conflicted {
			sp.conflicted = true
			p.cfg.Logger.Error("telegram: getUpdates answered 409 Conflict: another process polls this bot, or a webhook is set; "+
				"only one receiver may take a bot's updates — give every process the same redis.url and redis.prefix "+
				"so they share the polling lease, stop the other poller, or use webhook mode; backing off",
				"err", err, "wait", wait)
		}
		return p.clock.Sleep(ctx, wait) == nil
	case errors.Is(err, channels.ErrUnauthorized):
		// Logged once as the token's refusal (tokenRefused); polling again soon cannot help,
		// and the slowest retry still notices a token Telegram accepts again.
		sp.failures++
		return p.clock.Sleep(ctx, refusedWait) == nil
	}
	var wait time.Duration
	if ae, ok := errors.AsType[*APIError](err); ok && ae.RetryAfter > 0 {
		wait = ae.RetryAfter
	}
	return sp.fail(ctx, err, wait)
}

// recovered ends a spell of failures, saying so when it was logged as one.
func (sp *pollSpell) recovered() {
	if sp.failures > 1 || sp.conflicted {
		sp.p.cfg.Logger.Info("telegram: polling recovered", "failures", sp.failures)
	}
	sp.failures, sp.conflicted = 0, false
}

// blindPause pauses after a batch that ends in an update whose id cannot be read, when
// blindWait says so. It reports false when ctx ended.
func (sp *pollSpell) blindPause(ctx context.Context, batch []entry, moved bool, offset int64) bool {
	if len(batch) == 0 || batch[len(batch)-1].id > 0 {
		sp.blind = 0
		return true
	}
	wait, ok := blindWait(&sp.blind, moved)
	if !ok {
		return true
	}
	sp.p.cfg.Logger.Warn("telegram: the last update fetched has no readable update_id; polling again after a pause",
		"offset", offset, "wait", wait)
	return sp.p.clock.Sleep(ctx, wait) == nil
}

// conflictWait is the pause after the n-th 409 Conflict in a row (1-based): 1 s doubling,
// capped at 30 s. Polling again at once would end the other poller's getUpdates, and its next
// one would end ours: two processes would take turns failing as fast as the network allows.
func conflictWait(n int) time.Duration {
	return min(time.Second<<min(n-1, 5), 30*time.Second)
}

// blindWait decides the pause after a batch that ends in an update whose id cannot be read
// ("blind": no id after it tells how far the offset must move). The first such batch that moved
// the offset is polled again at once — with ids in sequence the offset is past the update now.
// One that moved nothing (no bound on the id: polling with no offset yet), or a second in a
// row (ids out of sequence: the offset moves one id a poll), waits a backoff: the update stays at
// the head of the queue until a readable update behind it lets the offset pass.
func blindWait(blind *int, moved bool) (time.Duration, bool) {
	*blind++
	if moved && *blind == 1 {
		return 0, false
	}
	return backoff(*blind), true
}

// saveOffset saves even while stopping: the batch it covers was handed over.
func (p *poller) saveOffset(offset int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.cfg.Offsets.SaveOffset(ctx, offset); err != nil {
		p.cfg.Logger.Error("telegram: saving the update offset failed; a restart may replay updates", "offset", offset, "err", err)
	}
}
