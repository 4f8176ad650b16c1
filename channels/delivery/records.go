package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/threads"
)

// records keeps what each run showed (Records), so that a replay edits or skips instead of
// posting twice; writes are retried while Redis is away, for up to maxWait.
type records struct {
	store   Records
	maxWait time.Duration
	log     *slog.Logger
	m       Metrics
	now     func() time.Time
}

// load reads what earlier attempts of the run recorded: a closing message delivered, the
// placeholder card. A failed read is logged and the run delivered as a first attempt.
func (rs *records) load(ctx context.Context, c *runCard) {
	c.loaded = true
	var rec threads.RunRecords
	err := rs.retryStore(ctx, func() error {
		var err error
		rec, err = rs.store.Lookup(ctx, c.runID, []string{StepFinal, StepCard, StepFile, StepStream, StepFinalIntent, StepFinalHead}, nil)
		return err
	})
	if err != nil {
		rs.log.Warn("channels: reading the run's delivery records failed", "run", c.runID, "err", err)
		return
	}
	if _, found := rec.Outbound[StepFinal]; found {
		c.done = true
		return
	}
	_, c.fileSent = rec.Outbound[StepFile]
	if b, found := rec.Outbound[StepFinalHead]; found {
		c.head = decodeHead(b, c.conv)
	}
	if b, found := rec.Outbound[StepFinalIntent]; found {
		c.finalIntent = intentTime(b, rs.now())
	}
	if b, found := rec.Outbound[StepCard]; found {
		// An earlier attempt posted the card: this one edits it, rather than streaming the
		// answer in a message of its own beside it (a Telegram draft would never replace it).
		c.ref = decodeRef(b, c.conv)
		c.noStream = true
	}
	if b, found := rec.Outbound[StepStream]; found {
		// An earlier attempt streamed: this one ends that stream and edits its message, which
		// its text replaces, rather than streaming the answer a second time.
		c.noStream = true
		if ref := decodeRef(b, c.conv); ref.ID() != "" && c.stream == nil {
			c.stale = ref
			if c.ref.ID() == "" {
				c.ref = ref
			}
		}
	}
}

// storeRecord writes record b of step (threads.RecordOutbound, SET NX), retried while Redis is
// away, and for recordGrace past ctx's end: the platform has what it records.
func (rs *records) storeRecord(ctx context.Context, runID, step string, b []byte) (first bool, existing []byte, err error) {
	ctx, cancel := outlive(ctx, recordGrace)
	defer cancel()
	err = rs.retryStore(ctx, func() error {
		var err error
		first, existing, err = rs.store.RecordOutbound(ctx, runID, step, b)
		return err
	})
	return first, existing, err
}

// record writes step's record of ref. It returns the record another attempt of the run wrote
// first, when one did (found true): ref is then a second message of that step.
func (rs *records) record(ctx context.Context, runID, step string, ref channels.MessageRef) (other channels.MessageRef, found bool) {
	b, err := json.Marshal(ref)
	if err != nil {
		return channels.MessageRef{}, false
	}
	// The platform has the message: without its record a replay posts it again. So the record
	// outlives the run's context — a run cancelled or handed back at shutdown just after its
	// send — for recordGrace at most.
	first, existing, err := rs.storeRecord(ctx, runID, step, b)
	switch {
	case err != nil:
		// The platform has the message and Redis has no record of it: the one way a replay of
		// this run posts it a second time. Counted, so an operator sees how often it can happen.
		rs.m.OutboundError(ref.Conv.Platform, "unrecorded")
		rs.log.Warn("channels: recording an outbound message failed; a replay may post again", "run", runID, "step", step, "err", err)
	case !first:
		rs.log.Warn("channels: another attempt of the run recorded this step first", "run", runID, "step", step)
		if json.Unmarshal(existing, &other) == nil && other.ID() != ref.ID() {
			if other.Conv.IsZero() {
				other.Conv = ref.Conv
			}
			return other, true
		}
	}
	return channels.MessageRef{}, false
}

// intend records the write-ahead intent step (StepCardIntent, StepFinalIntent) of a message
// about to be sent anew, and returns when an earlier attempt of the run recorded it — zero when
// none did. The caller knows the step itself is not recorded (that attempt may have posted the
// message, or may have stopped before). A failed write is logged and the message sent anyway:
// Redis is then likely down for the step's record too, which record counts as "unrecorded".
func (rs *records) intend(ctx context.Context, c *runCard, step string) (earlier time.Time) {
	at := rs.now()
	var first bool
	var existing []byte
	err := rs.retryStore(ctx, func() error {
		var err error
		first, existing, err = rs.store.RecordOutbound(ctx, c.runID, step, []byte(strconv.FormatInt(at.UnixMilli(), 10)))
		return err
	})
	if err != nil {
		rs.log.Warn("channels: recording a send's intent failed; sending anyway", "run", c.runID, "step", step, "err", err)
		return time.Time{}
	}
	if first {
		return time.Time{}
	}
	return intentTime(existing, at)
}

// intentTime is the time an intent record holds; an unreadable one is still an earlier
// attempt's intent, dated now.
func intentTime(b []byte, now time.Time) time.Time {
	ms, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || ms <= 0 {
		return now
	}
	return time.UnixMilli(ms)
}

// countPossibleDouble counts the message of step just sent when an earlier attempt of the run
// intended to send it at earlier (non-zero) and left no record: the platform may now show it
// twice. A channel that recognises the resend by its key (KeyedSender) within its window
// returned the first message instead, and nothing is counted; a message an earlier attempt
// sent that was found (SentFinder) comes with a zero earlier.
func (rs *records) countPossibleDouble(ch channels.Channel, c *runCard, step string, earlier time.Time) {
	if earlier.IsZero() {
		return
	}
	if ks, ok := ch.(channels.KeyedSender); ok && rs.now().Sub(earlier) < ks.KeyWindow() {
		return
	}
	rs.m.OutboundError(c.conv.Platform, "possible_double")
	rs.log.Warn("channels: an earlier attempt of the run may have posted this message too; it may show twice", "run", c.runID, "step", step, "intended", earlier)
}

// recordGrace is how long a record may still be written after the run's context ended;
// closingGrace how long a run's closing message may still be sent.
const (
	recordGrace  = 3 * time.Second
	closingGrace = 5 * time.Second
)

// outlive returns a context that ends grace after ctx does (or when cancel is called), with
// ctx's values.
func outlive(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(grace, cancel)
		context.AfterFunc(out, func() { t.Stop() })
	})
	return out, func() { stop(); cancel() }
}

// Retries of delivery's records. A record that cannot be written (Redis unreachable) is what
// lets a replay of the run post its message again, so it is tried again for a while — from
// storeRetryBase doubling up to storeRetryMax, for at most MaxRetryWait in all — before it is
// given up and logged.
const (
	storeRetryBase = 100 * time.Millisecond
	storeRetryMax  = 2 * time.Second
)

// retryStore calls f until it succeeds, ctx ends or MaxRetryWait has passed, backing off in
// between; it returns f's last error.
func (rs *records) retryStore(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(rs.maxWait)
	wait := storeRetryBase
	for {
		err := f()
		if err == nil || ctx.Err() != nil || errors.Is(err, threads.ErrInvalidArgument) || errors.Is(err, threads.ErrCorrupt) ||
			time.Now().Add(wait).After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, storeRetryMax)
	}
}
