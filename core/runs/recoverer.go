package runs

import (
	"context"
	"time"
)

// rescueEvery is how many recoverer ticks pass between scans for conversations whose enqueuer
// died before hinting them.
const rescueEvery = 10

// recover is the recoverer component. Every half lease it claims hints idle for a whole lease —
// their holder stopped heartbeating, so it is dead or cut off — and hands them to the workers,
// which take the conversation over once its lease has expired. Every few ticks it also rescues
// conversations queued but never hinted.
func (p *Pool) recover(ctx context.Context) {
	t := time.NewTicker(p.opt.Lease / 2)
	defer t.Stop()
	for tick := 1; ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, ok := p.takeSlots(ctx, false, p.opt.Workers); ok {
			hints, err := p.st.AutoClaim(ctx, p.opt.Consumer, p.opt.Lease, n)
			if err != nil && ctx.Err() == nil {
				p.log.Warn("runs: reclaiming idle hints failed", "err", err)
			}
			if len(hints) > 0 {
				p.log.Info("runs: taking over conversations of a silent worker", "hints", len(hints))
			}
			p.dispatch(hints, n)
		}
		if tick%rescueEvery == 0 {
			p.rescue(ctx)
		}
	}
}

// rescue re-hints conversations whose hint was asked for two leases ago and never claimed.
func (p *Pool) rescue(ctx context.Context) {
	now := time.Now()
	stale := now.Add(-2 * p.opt.Lease).UnixMilli()
	err := p.st.ScanConvs(ctx, func(tag string) error {
		again, err := p.st.Rescue(ctx, tag, now.UnixMilli(), stale)
		if err != nil || !again {
			return err
		}
		p.log.Warn("runs: rescuing a conversation that was queued but never scheduled", "tag", tag)
		_, err = p.st.Ready(ctx, false, 0, tag)
		return err
	})
	if err != nil && ctx.Err() == nil {
		p.log.Warn("runs: rescue scan failed", "err", err)
	}
}
