package channels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/render"
)

// FinalEditor is an Editor with a separate, unthrottled edit for a run's closing message
// (Telegram's adapter has one). Delivery prefers it for terminal events.
type FinalEditor interface {
	EditFinal(ctx context.Context, ref MessageRef, m Message) (MessageRef, error)
}

// Delivery defaults applied to zero DeliveryOptions fields.
const (
	DefaultMaxRetryWait      = 30 * time.Second
	DefaultRateLimitAttempts = 5
	DefaultCardMemory        = time.Hour
	// DefaultPlaceholderAfter is the grace period before a run's "working" placeholder is posted
	// (DeliveryOptions.PlaceholderAfter); cmd/bot passes it. A run answered within it shows one
	// message, the answer.
	DefaultPlaceholderAfter = time.Second
)

// Outbound record steps (threads.RecordOutbound) delivery writes per run.
const (
	// StepCard holds the JSON MessageRef of the run's placeholder card, once one is posted.
	StepCard = "card"
	// StepFinal holds the JSON MessageRef of the run's closing message, once it is delivered. A
	// run answered within the placeholder's grace period has only this record: its one message
	// is both its card and its final, and a run with a final record is never delivered again.
	StepFinal = "final"
	// StepCardIntent and StepFinalIntent are the write-ahead intents of StepCard and StepFinal:
	// recorded (with the time, unix milliseconds) just before the message is sent as a new one,
	// so that an attempt finding the intent but not the step's record knows an earlier attempt
	// may have posted it in the instant before it stopped (killed, or its record write lost).
	StepCardIntent  = StepCard + ".intent"
	StepFinalIntent = StepFinal + ".intent"
)

// DeliveryOptions configure a Delivery. Channels and Threads are required.
type DeliveryOptions struct {
	// Channels by conv.Key.Platform.
	Channels map[string]Channel
	Threads  *threads.Store
	// ActionKey is the key the adapters sign interactive ids with; a form whose id it cannot
	// sign is shown as text (answered by typing).
	ActionKey render.Key
	// EditEvery throttles progress edits per platform (latest wins); zero edits on every event.
	EditEvery map[string]time.Duration
	// StreamEvery throttles appends to an answer's stream per platform (Streamer): deltas
	// arriving within it are sent as one; zero appends on every delta.
	StreamEvery map[string]time.Duration
	Logger      *slog.Logger
	Metrics     Metrics
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxRetryWait caps one wait after a rate limit (default 30s); RateLimitAttempts bounds the
	// tries of one operation (default 5).
	MaxRetryWait      time.Duration
	RateLimitAttempts int
	// CardMemory is how long an unfinished run's card state is kept in memory without events
	// (default 1h); a later event rebuilds it from the recorded placeholder.
	CardMemory time.Duration
	// PlaceholderAfter is the grace period between a run's started event and its "working"
	// placeholder. A closing event (answer, question, failure, cancellation) arriving within it
	// is sent as the run's one message, with no placeholder before it. Progress and subagent
	// results arriving within it are kept and shown by the placeholder posted when it ends.
	// Zero posts the placeholder at once on started (and always signals typing there); cmd/bot
	// passes DefaultPlaceholderAfter.
	PlaceholderAfter time.Duration
	// MaxAnswerMessages is how many messages an answer may take (runs.max_answer_messages) on a
	// channel that can count them (Pager) and send files (FileSender): the rest goes as a
	// Markdown file. Zero, or a channel without those abilities, sends the whole answer as
	// messages.
	MaxAnswerMessages int
}

// Delivery shows run events in the conversation: one card per run, posted as a "working"
// placeholder on started (or, with PlaceholderAfter, once the run outlasts that grace period),
// edited with progress (throttled per platform) and subagent results, and replaced by the
// answer, the question, or the failure — which a run closing within the grace period sends as
// its only message. It is idempotent across replays: the placeholder and the closing message are
// recorded per run id, so a second attempt of a run edits the same card and never posts the
// answer twice. It implements runs.Sink; Deliver may be called concurrently for different runs.
// Close stops its timers.
type Delivery struct {
	opt DeliveryOptions
	log *slog.Logger
	m   Metrics
	now func() time.Time
	// afterFunc schedules timers (time.AfterFunc; tests fire them by hand); typingAfterFunc
	// those of the typing refreshes, apart, so that tests firing the others by hand count them.
	afterFunc, typingAfterFunc func(time.Duration, func()) stopper

	// closing is the context of the timers' callbacks: Close cancels it, so that one waiting on
	// Redis or the platform does not hold Close up.
	closing     context.Context
	stopClosing context.CancelFunc

	mu        sync.Mutex
	cards     map[string]*runCard
	lastSweep time.Time
	closed    bool
	wg        sync.WaitGroup // throttled edits and due placeholders, scheduled or running
}

var _ runs.Sink = (*Delivery)(nil)

// runCard is one run's card as delivery last showed it.
type runCard struct {
	mu       sync.Mutex
	runID    string
	conv     conv.Key
	loaded   bool // records read
	done     bool // closing message delivered (or found delivered)
	fileSent bool // the rest of a long answer was sent (or found sent) as a file
	// finalIntent, when set, is when an earlier attempt intended to send the closing message
	// anew and left no record of it: it may be in the chat already. Such a replay posts no
	// placeholder, and sends the closing message anew where the platform recognises it
	// (KeyedSender, SentFinder).
	finalIntent time.Time
	// finalRefused: an earlier try of the run in this process sent the closing message and the
	// platform answered no (not a timeout, after which it may have been posted): the intent it
	// left names no message that may show, so the next try's send is not a possible double.
	finalRefused bool
	// restRefused: as finalRefused, for the rest of a long answer (the file and the messages
	// it fell back to both refused).
	restRefused bool
	// head is a long answer's closing message, delivered while the rest of the answer was not
	// (StepFinalHead): the run's next try sends that rest and records the closing message,
	// without showing it again.
	head     answerHead
	ref      MessageRef
	replyTo  string
	started  time.Time
	touched  time.Time
	lastEdit time.Time
	progress string
	// subagents are shown in the order the lead asked for them (subOrder, SubagentInfo.Order),
	// whatever order they finish in; those without an order follow, as they came.
	subagents []render.SubagentResult
	subIDs    []string
	subOrder  []int
	timer     stopper // the throttled edit scheduled
	// owed: started was delivered and the placeholder is not posted yet; grace posts it when
	// the grace period ends, unless a closing event comes first.
	owed     bool
	grace    stopper
	graceGen int // which grace period's callback may still post
	// typing is the next typing refresh while the run works (keepTyping); typingGen tells a
	// stopped one's callback to do nothing.
	typing    stopper
	typingGen int

	// user is the channel_user_id the run answers (a stream's recipient).
	user string
	// answer is the answer text streamed so far (answer deltas, parts a paragraph apart);
	// partAt is where its current part (part) starts.
	answer string
	part   int
	partAt int
	// stream is the run's stream (Streamer), from its first task or delta; noStream: this run
	// posts and edits (the conversation refused streaming, or an earlier attempt streamed).
	stream   *runStream
	noStream bool
	// stale is the stream an earlier attempt started, to be ended before this attempt edits it.
	stale MessageRef
}

// NewDelivery checks opt and returns a Delivery.
func NewDelivery(opt DeliveryOptions) (*Delivery, error) {
	if len(opt.Channels) == 0 || opt.Threads == nil {
		return nil, errors.New("channels: delivery needs channels and a thread store")
	}
	if opt.MaxRetryWait <= 0 {
		opt.MaxRetryWait = DefaultMaxRetryWait
	}
	if opt.RateLimitAttempts <= 0 {
		opt.RateLimitAttempts = DefaultRateLimitAttempts
	}
	if opt.CardMemory <= 0 {
		opt.CardMemory = DefaultCardMemory
	}
	d := &Delivery{opt: opt, log: opt.Logger, m: opt.Metrics, now: opt.Now, cards: map[string]*runCard{}}
	if d.log == nil {
		d.log = slog.Default()
	}
	if d.m == nil {
		d.m = nopMetrics{}
	}
	if d.now == nil {
		d.now = time.Now
	}
	d.afterFunc = func(wait time.Duration, f func()) stopper { return time.AfterFunc(wait, f) }
	d.typingAfterFunc = d.afterFunc
	d.closing, d.stopClosing = context.WithCancel(context.Background())
	return d, nil
}

// stopper is a scheduled callback (a *time.Timer); Stop reports whether it stopped the call.
type stopper interface{ Stop() bool }

// Close stops pending throttled edits and due placeholders, cancels the context of any running
// one and waits for it; later events are still delivered, without throttling timers. Safe to
// call more than once.
func (d *Delivery) Close() {
	d.stopClosing()
	d.mu.Lock()
	d.closed = true
	cards := make([]*runCard, 0, len(d.cards))
	for _, c := range d.cards {
		cards = append(cards, c)
	}
	d.mu.Unlock()
	for _, c := range cards {
		c.mu.Lock()
		d.stopTimers(c)
		c.mu.Unlock()
	}
	d.wg.Wait()
}

// stopTimer cancels c's pending edit; the caller holds c.mu.
func (d *Delivery) stopTimer(c *runCard) {
	if c.timer != nil && c.timer.Stop() {
		d.wg.Done() // the callback will never run
	}
	c.timer = nil
}

// stopTimers cancels c's pending edit, its owed placeholder and its typing refresh; the caller
// holds c.mu.
func (d *Delivery) stopTimers(c *runCard) {
	d.stopTimer(c)
	d.stopGrace(c)
	d.stopTyping(c)
}

// schedule runs f on c (c.mu held) after wait, unless Close was called; the timer is owned by
// d.wg until f returns or the timer is stopped. It reports false after Close.
func (d *Delivery) schedule(c *runCard, wait time.Duration, f func()) (stopper, bool) {
	return d.scheduleWith(d.afterFunc, c, wait, f)
}

// scheduleWith is schedule on the timers af makes.
func (d *Delivery) scheduleWith(af func(time.Duration, func()) stopper, c *runCard, wait time.Duration, f func()) (stopper, bool) {
	d.mu.Lock()
	closed := d.closed
	if !closed {
		d.wg.Add(1)
	}
	d.mu.Unlock()
	if closed {
		return nil, false
	}
	return af(wait, func() {
		defer d.wg.Done()
		c.mu.Lock()
		defer c.mu.Unlock()
		f()
	}), true
}

// card returns the run's card state, creating it; it also forgets idle cards.
func (d *Delivery) card(ev runs.Event) *runCard {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if now.Sub(d.lastSweep) > time.Minute {
		d.lastSweep = now
		for id, c := range d.cards {
			if c.mu.TryLock() {
				if now.Sub(c.touched) > d.opt.CardMemory {
					d.stopTimers(c)
					delete(d.cards, id)
				}
				c.mu.Unlock()
			}
		}
	}
	c := d.cards[ev.RunID]
	if c == nil {
		c = &runCard{runID: ev.RunID, conv: ev.Conv, touched: now}
		d.cards[ev.RunID] = c
	}
	return c
}

func (d *Delivery) forget(runID string) {
	d.mu.Lock()
	delete(d.cards, runID)
	d.mu.Unlock()
}

// Deliver shows one run event. It returns an error only when a closing message (answer,
// question, failure) could not be delivered at all — after falling back to text, to a new
// message and waiting out rate limits; that is also logged at Error with the run id.
func (d *Delivery) Deliver(ctx context.Context, ev runs.Event) error {
	ch := d.opt.Channels[ev.Conv.Platform]
	if ev.Kind == runs.EventAnswerDelta {
		if _, ok := ch.(Streamer); !ok {
			return nil // only a stream shows text as it is written; the final event carries it all
		}
	}
	if ch == nil {
		d.log.Error("channels: no channel for a run's platform; the event is lost", "run", ev.RunID, "platform", ev.Conv.Platform, "kind", ev.Kind)
		return fmt.Errorf("channels: deliver %s of run %s: no channel for platform %q", ev.Kind, ev.RunID, ev.Conv.Platform)
	}
	c := d.card(ev)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.touched = d.now()
	if !c.loaded {
		c.replyTo, c.user = ev.ReplyTo, ev.User
		if ev.Attempt == 1 {
			c.loaded = true // a run's first attempt: no earlier one can have delivered anything
		} else {
			d.load(ctx, c)
		}
	}
	if c.stale.ID() != "" {
		d.staleStream(ctx, ch, c, c.stale)
		c.stale = MessageRef{}
	}
	if c.done {
		d.log.Debug("channels: run already delivered; skipping a replayed event", "run", ev.RunID, "kind", ev.Kind)
		if ev.Kind.Terminal() {
			d.forget(ev.RunID)
		}
		return nil
	}
	switch ev.Kind {
	case runs.EventStarted:
		d.restart(ctx, ch, c)
		d.start(ctx, ch, c, ev)
	case runs.EventProgress:
		c.progress = progressText(ev)
		if ev.Tool == "" && ev.Text != "" {
			// A notice (the model is unavailable; the answer will follow) has no place in a
			// stream of the answer: the stream's message becomes the card that shows it. It
			// does not wait out the grace period either: the user is told now, and the answer,
			// however soon it follows, replaces it.
			d.leaveStream(ctx, ch, c)
			if c.owed {
				d.stopGrace(c)
				d.placeholderDue(ctx, ch, c)
				return nil
			}
		}
		d.update(ctx, ch, c)
	case runs.EventSubagentStarted, runs.EventSubagentResult:
		d.subagentEvent(ctx, ch, c, ev)
	case runs.EventAnswerDelta:
		d.answerDelta(ctx, ch, c, ev)
	case runs.EventApproval:
		d.approvalCard(ctx, ch, c, ev)
	case runs.EventFinal, runs.EventFailed, runs.EventCancelled, runs.EventClarification:
		d.stopTimers(c) // a placeholder still owed is never posted: the closing card is the message
		err := d.finish(ctx, ch, c, ev)
		if err == nil {
			c.done = true
			d.forget(ev.RunID)
		}
		return err
	default:
		d.log.Warn("channels: unknown run event kind ignored", "run", ev.RunID, "kind", ev.Kind)
	}
	return nil
}

// load reads what earlier attempts of the run recorded: a closing message delivered, the
// placeholder card. A failed read is logged and the run delivered as a first attempt.
func (d *Delivery) load(ctx context.Context, c *runCard) {
	c.loaded = true
	var rec threads.RunRecords
	err := d.retryStore(ctx, func() error {
		var err error
		rec, err = d.opt.Threads.Lookup(ctx, c.runID, []string{StepFinal, StepCard, StepFile, StepStream, StepFinalIntent, StepFinalHead}, nil)
		return err
	})
	if err != nil {
		d.log.Warn("channels: reading the run's delivery records failed", "run", c.runID, "err", err)
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
		c.finalIntent = intentTime(b, d.now())
	}
	if b, found := rec.Outbound[StepCard]; found {
		c.ref = decodeRef(b, c.conv)
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

func progressText(ev runs.Event) string {
	if ev.Text != "" {
		return ev.Text
	}
	if ev.Tool != "" {
		return "_Using " + ev.Tool + "…_"
	}
	return ""
}

func (c *runCard) addSubagent(s *runs.SubagentInfo) {
	if s == nil {
		return
	}
	r := render.SubagentResult{Name: s.Name, StopReason: s.StopReason, Summary: s.Summary}
	if r.Name == "" {
		r.Name = "subagent"
	}
	if len(s.Structured) > 0 {
		r.Structured, _ = render.FieldsFromJSON(s.Structured)
	}
	key := s.ID
	if key == "" {
		key = s.Name
	}
	for i, id := range c.subIDs {
		if id == key {
			c.subagents[i] = r
			return
		}
	}
	at := len(c.subIDs)
	if s.Order > 0 {
		for i, o := range c.subOrder {
			if o == 0 || o > s.Order {
				at = i
				break
			}
		}
	}
	c.subIDs = slices.Insert(c.subIDs, at, key)
	c.subOrder = slices.Insert(c.subOrder, at, s.Order)
	c.subagents = slices.Insert(c.subagents, at, r)
}

func (d *Delivery) footer(c *runCard) render.Footer {
	f := render.Footer{RunID: c.runID}
	if !c.started.IsZero() {
		f.Elapsed = d.now().Sub(c.started)
	}
	return f
}

func (d *Delivery) workingCard(c *runCard) render.Card {
	return render.Card{Title: "Working on it…", Status: render.StatusWorking, Body: c.workingBody(),
		Subagents: append([]render.SubagentResult(nil), c.subagents...), Footer: d.footer(c)}
}

// storeRecord writes record b of step (threads.RecordOutbound, SET NX), retried while Redis is
// away, and for recordGrace past ctx's end: the platform has what it records.
func (d *Delivery) storeRecord(ctx context.Context, runID, step string, b []byte) (first bool, existing []byte, err error) {
	ctx, cancel := outlive(ctx, recordGrace)
	defer cancel()
	err = d.retryStore(ctx, func() error {
		var err error
		first, existing, err = d.opt.Threads.RecordOutbound(ctx, runID, step, b)
		return err
	})
	return first, existing, err
}

// record writes step's record of ref. It returns the record another attempt of the run wrote
// first, when one did (found true): ref is then a second message of that step.
func (d *Delivery) record(ctx context.Context, runID, step string, ref MessageRef) (other MessageRef, found bool) {
	b, err := json.Marshal(ref)
	if err != nil {
		return MessageRef{}, false
	}
	// The platform has the message: without its record a replay posts it again. So the record
	// outlives the run's context — a run cancelled or handed back at shutdown just after its
	// send — for recordGrace at most.
	first, existing, err := d.storeRecord(ctx, runID, step, b)
	switch {
	case err != nil:
		// The platform has the message and Redis has no record of it: the one way a replay of
		// this run posts it a second time. Counted, so an operator sees how often it can happen.
		d.m.OutboundError(ref.Conv.Platform, "unrecorded")
		d.log.Warn("channels: recording an outbound message failed; a replay may post again", "run", runID, "step", step, "err", err)
	case !first:
		d.log.Warn("channels: another attempt of the run recorded this step first", "run", runID, "step", step)
		if json.Unmarshal(existing, &other) == nil && other.ID() != ref.ID() {
			if other.Conv.IsZero() {
				other.Conv = ref.Conv
			}
			return other, true
		}
	}
	return MessageRef{}, false
}

// dropSecond deletes ref, a message of step that another attempt of the run posted too and
// recorded first (an attempt taken over while it still ran); it reports whether ref is gone.
func (d *Delivery) dropSecond(ctx context.Context, ch Channel, c *runCard, step string, ref MessageRef) bool {
	del, ok := ch.(Deleter)
	if !ok {
		return false
	}
	err := withRateLimit(ctx, d.opt.MaxRetryWait, d.opt.RateLimitAttempts, func(ctx context.Context) error {
		return del.Delete(ctx, ref)
	})
	if err != nil && !errors.Is(err, ErrMessageGone) {
		d.m.OutboundError(c.conv.Platform, "delete_failed")
		d.log.Warn("channels: deleting a message another attempt of the run also posted failed; it shows twice", "run", c.runID, "step", step, "err", err)
		return false
	}
	d.log.Info("channels: deleted a message another attempt of the run had posted first", "run", c.runID, "step", step)
	return true
}

// intend records the write-ahead intent step (StepCardIntent, StepFinalIntent) of a message
// about to be sent anew, and returns when an earlier attempt of the run recorded it — zero when
// none did. The caller knows the step itself is not recorded (that attempt may have posted the
// message, or may have stopped before). A failed write is logged and the message sent anyway:
// Redis is then likely down for the step's record too, which record counts as "unrecorded".
func (d *Delivery) intend(ctx context.Context, c *runCard, step string) (earlier time.Time) {
	at := d.now()
	var first bool
	var existing []byte
	err := d.retryStore(ctx, func() error {
		var err error
		first, existing, err = d.opt.Threads.RecordOutbound(ctx, c.runID, step, []byte(strconv.FormatInt(at.UnixMilli(), 10)))
		return err
	})
	if err != nil {
		d.log.Warn("channels: recording a send's intent failed; sending anyway", "run", c.runID, "step", step, "err", err)
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

// sentFindMargin widens the look-up of an earlier attempt's message (SentFinder) for the
// difference between this process's clock, which stamped the intent, and the platform's.
const sentFindMargin = time.Minute

// sendAnew sends card as a new message with key, unless the channel can find it already sent
// by the earlier attempt that intended the same send at earlier (non-zero; SentFinder): then it
// returns that message, found true. A failed look-up is logged and the card sent.
func (d *Delivery) sendAnew(ctx context.Context, ch Channel, c *runCard, to Target, card render.Card, key string, earlier time.Time) (ref MessageRef, found bool, err error) {
	if f, ok := ch.(SentFinder); ok && !earlier.IsZero() {
		ref, found, err := f.FindSent(ctx, to, key, earlier.Add(-sentFindMargin))
		switch {
		case err != nil:
			d.log.Warn("channels: looking for the message an earlier attempt may have sent failed; sending it again", "run", c.runID, "key", key, "err", err)
		case found:
			d.log.Info("channels: found the message an earlier attempt sent but never recorded; not sending it again", "run", c.runID, "key", key)
			return ref, true, nil
		}
	}
	ref, err = d.sendKeyed(ctx, ch, to, card, key)
	return ref, false, err
}

// countPossibleDouble counts the message of step just sent when an earlier attempt of the run
// intended to send it at earlier (non-zero) and left no record: the platform may now show it
// twice. A channel that recognises the resend by its key (KeyedSender) within its window
// returned the first message instead, and nothing is counted; a message an earlier attempt
// sent that was found (SentFinder) comes with a zero earlier.
func (d *Delivery) countPossibleDouble(ch Channel, c *runCard, step string, earlier time.Time) {
	if earlier.IsZero() {
		return
	}
	if ks, ok := ch.(KeyedSender); ok && d.now().Sub(earlier) < ks.KeyWindow() {
		return
	}
	d.m.OutboundError(c.conv.Platform, "possible_double")
	d.log.Warn("channels: an earlier attempt of the run may have posted this message too; it may show twice", "run", c.runID, "step", step, "intended", earlier)
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
func (d *Delivery) retryStore(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(d.opt.MaxRetryWait)
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

// update edits the card with the latest state, at most once per the platform's EditEvery; a
// skipped edit is made when the interval ends (latest wins).
func (d *Delivery) update(ctx context.Context, ch Channel, c *runCard) {
	if _, ok := ch.(Editor); !ok || c.ref.ID() == "" {
		return // the state is kept for the closing message
	}
	d.throttle(ctx, c, d.opt.EditEvery[c.conv.Platform], func(ctx context.Context) { d.editProgress(ctx, ch, c) })
}

// throttle runs show on c at once when every has passed since c's last edit (or every is zero),
// else once when it has — latest state wins, one call per interval — unless c is done by then;
// the caller holds c.mu.
func (d *Delivery) throttle(ctx context.Context, c *runCard, every time.Duration, show func(ctx context.Context)) {
	since := d.now().Sub(c.lastEdit)
	if every <= 0 || since >= every {
		d.stopTimer(c)
		show(ctx)
		return
	}
	if c.timer != nil {
		return
	}
	c.timer, _ = d.schedule(c, every-since, func() {
		c.timer = nil
		if c.done {
			return
		}
		ctx, cancel := context.WithTimeout(d.closing, d.opt.MaxRetryWait)
		defer cancel()
		show(ctx)
	})
}

// editProgress edits the placeholder with the working card; a vanished placeholder is posted
// again. Failures are logged: progress is best effort, its state survives into the final card.
func (d *Delivery) editProgress(ctx context.Context, ch Channel, c *runCard) {
	ed, ok := ch.(Editor)
	if !ok {
		return
	}
	card := d.workingCard(c)
	platform := c.conv.Platform
	var ref MessageRef
	err := withRateLimit(ctx, d.opt.MaxRetryWait, d.opt.RateLimitAttempts, func(ctx context.Context) error {
		var err error
		ref, err = ed.Edit(ctx, c.ref, Message{Card: &card})
		return err
	})
	c.lastEdit = d.now()
	switch {
	case err == nil:
		if len(ref.IDs) > 0 {
			c.ref = ref
		}
	case errors.Is(err, ErrNotModified):
	case errors.Is(err, ErrMessageGone):
		d.m.OutboundError(platform, "message_gone")
		if ref, err := d.send(ctx, ch, Target{Conv: c.conv, ReplyTo: c.replyTo}, card); err == nil {
			c.ref = ref
		}
	default:
		kind := "edit_failed"
		var rl *RateLimitError
		if errors.As(err, &rl) {
			kind = "rate_limited"
		}
		d.m.OutboundError(platform, kind)
		d.log.Debug("channels: progress edit failed", "run", c.runID, "err", err)
	}
}

// send posts a card; a refused card is sent again as plain text.
func (d *Delivery) send(ctx context.Context, ch Channel, to Target, card render.Card) (MessageRef, error) {
	return d.sendKeyed(ctx, ch, to, card, "")
}

// sendKeyed is send with the message's idempotency key (Message.Key).
func (d *Delivery) sendKeyed(ctx context.Context, ch Channel, to Target, card render.Card, key string) (MessageRef, error) {
	var ref MessageRef
	err := withRateLimit(ctx, d.opt.MaxRetryWait, d.opt.RateLimitAttempts, func(ctx context.Context) error {
		var err error
		ref, err = d.sendWhole(ctx, ch, to, Message{Card: &card, Key: key})
		return err
	})
	if !errors.Is(err, ErrCardRefused) {
		return ref, err
	}
	d.m.OutboundError(to.Conv.Platform, "card_refused")
	d.log.Warn("channels: the platform refused a card; sending plain text", "conv", to.Conv.String(), "title", card.Title)
	out := MessageRef{Conv: to.Conv}
	for i, piece := range render.Plain(card) {
		if i > 0 {
			to.ReplyTo = ""
		}
		var r MessageRef
		err := withRateLimit(ctx, d.opt.MaxRetryWait, d.opt.RateLimitAttempts, func(ctx context.Context) error {
			var err error
			r, err = d.sendWhole(ctx, ch, to, Message{Text: piece, Key: pieceKey(key, i)})
			return err
		})
		if err != nil {
			if len(out.IDs) > 0 {
				return d.withdraw(ctx, ch, out, fmt.Errorf("channels: sending plain text part %d: %w", i+1, err))
			}
			return out, err
		}
		out.IDs = append(out.IDs, r.IDs...)
	}
	return out, nil
}

// pieceKey is the key of plain-text piece i of a refused card keyed key ("" for none).
func pieceKey(key string, i int) string {
	if key == "" {
		return ""
	}
	return key + ".text" + strconv.Itoa(i)
}

// edit edits ref with card (EditFinal where the channel has it); a refused card is edited in
// as plain text.
func (d *Delivery) edit(ctx context.Context, ed Editor, ch Channel, ref MessageRef, card render.Card) (MessageRef, error) {
	do := ed.Edit
	if fe, ok := ch.(FinalEditor); ok {
		do = fe.EditFinal
	}
	call := func(m Message) (MessageRef, error) {
		var out MessageRef
		err := withRateLimit(ctx, d.opt.MaxRetryWait, d.opt.RateLimitAttempts, func(ctx context.Context) error {
			var err error
			out, err = do(ctx, ref, m)
			if err != nil {
				out, err = d.withdrawAdded(ctx, ch, ref, out, err)
			}
			return err
		})
		return out, err
	}
	out, err := call(Message{Card: &card})
	if errors.Is(err, ErrCardRefused) {
		d.m.OutboundError(ref.Conv.Platform, "card_refused")
		out, err = call(Message{Text: strings.Join(render.Plain(card), "\n\n")})
	}
	if errors.Is(err, ErrNotModified) {
		return ref, nil
	}
	if err == nil && len(out.IDs) == 0 {
		out = ref
	}
	return out, err
}

// closingCard is the card a terminal event leaves.
func (d *Delivery) closingCard(c *runCard, ev runs.Event) render.Card {
	subs := append([]render.SubagentResult(nil), c.subagents...)
	switch ev.Kind {
	case runs.EventFinal:
		body := ev.Text
		if strings.TrimSpace(body) == "" {
			body = "_(No answer.)_"
		}
		return render.Card{Title: "Answer", Status: render.StatusDone, Body: body, Subagents: subs, Footer: d.footer(c)}
	case runs.EventClarification:
		if ev.Form == nil {
			return render.Card{Title: "Question", Status: render.StatusWaiting, Body: ev.Text, Subagents: subs, Footer: d.footer(c)}
		}
		f := *ev.Form
		if _, err := render.EncodeAction(d.opt.ActionKey, render.ActionID{Kind: render.ActionChoose, Token: f.ID}); err != nil && !errors.Is(err, render.ErrNoKey) {
			f.Fields = nil // ids cannot be signed: show it as text, answered by typing
			f.Question = formTextAll(*ev.Form)
		}
		card := formCard(f, ev.Text, 0, partialAnswer{}, c.runID)
		card.Subagents, card.Footer = subs, d.footer(c)
		return card
	case runs.EventCancelled:
		return render.Card{Title: "Cancelled", Status: render.StatusCancelled, Body: orDefault(ev.Reason, "Cancelled."), Subagents: subs, Footer: d.footer(c)}
	}
	return render.Card{Title: "Something went wrong", Status: render.StatusFailed, Body: orDefault(ev.Reason, "Sorry, this could not be completed."), Subagents: subs, Footer: d.footer(c)}
}

// formTextAll is every field of a form as text, for a form shown without buttons.
func formTextAll(f runs.Form) string {
	parts := []string{f.Question}
	for i := range f.Fields {
		t := formText(runs.Form{Fields: f.Fields}, i)
		parts = append(parts, strings.TrimSpace(t))
	}
	return joinParagraphs(parts...)
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// finish delivers the closing message: edited into the placeholder where possible, else sent
// anew with the placeholder removed; then recorded so a replay skips it.
// unreachable gives a run's closing message up: the bot can no longer write to the
// conversation, and retrying the run would only fail again.
func (d *Delivery) unreachable(c *runCard, ev runs.Event, err error) {
	d.m.OutboundError(c.conv.Platform, "unreachable")
	d.log.Warn("channels: the conversation cannot be reached; the run's closing message is given up", "run", c.runID, "kind", ev.Kind, "conv", c.conv.String(), "err", err)
}

func (d *Delivery) finish(ctx context.Context, ch Channel, c *runCard, ev runs.Event) error {
	// The run's work is done: a cancel or hand-back arriving now (shutdown) must not cut its
	// closing message off mid-send, which could leave it posted but unrecorded, to be posted
	// again by the next attempt. It gets closingGrace past the run's context.
	ctx, cancel := outlive(ctx, closingGrace)
	defer cancel()
	if c.head.Ref.ID() != "" {
		return d.finishRest(ctx, ch, c, ev)
	}
	if c.streaming() {
		shown := c.answer
		if d.finishStream(ctx, ch, c, ev) {
			return nil
		}
		if c.stream == nil && c.ref.ID() == "" && ev.Kind == runs.EventClarification && strings.TrimSpace(ev.Text) != "" &&
			strings.Contains(shown, strings.TrimSpace(ev.Text)) {
			ev.Text = "" // the stopped stream shows it, just above the question
		}
	}
	card := d.closingCard(c, ev)
	rest := ""
	if ev.Kind == runs.EventFinal {
		card, rest = splitAnswer(ch, card, d.opt.MaxAnswerMessages)
	}
	platform := c.conv.Platform
	var ref MessageRef
	delivered, keep := false, false
	var earlier time.Time // when an earlier attempt intended to send the closing message anew
	own := c.ref.ID()     // the placeholder this attempt knows: edited, removed or found gone
	_, keyed := ch.(KeyedSender)
	_, finds := ch.(SentFinder)
	resend := !c.finalIntent.IsZero() && (keyed || finds) // the earlier attempt's message comes back
	if ed, ok := ch.(Editor); ok && c.ref.ID() != "" && !resend {
		out, err := d.edit(ctx, ed, ch, c.ref, card)
		switch {
		case err == nil:
			ref, delivered = out, true
		case errors.Is(err, ErrMessageGone):
			d.m.OutboundError(platform, "message_gone")
			c.ref = MessageRef{} // nothing left behind to remove
		case errors.Is(err, ErrUnreachable):
			d.unreachable(c, ev, err)
			return nil
		default:
			d.m.OutboundError(platform, "edit_failed")
			d.log.Warn("channels: editing the closing message into the placeholder failed; sending it anew", "run", c.runID, "err", err)
			if c.stream != nil && c.stream.sent > 0 && ev.Kind == runs.EventFinal {
				// The message still shows the streamed text: the new one carries only the rest.
				rest := ev
				rest.Text = c.unseen(ev.Text)
				card, _ = splitAnswer(ch, d.closingCard(c, rest), d.opt.MaxAnswerMessages)
				keep = true
			}
		}
	}
	if !delivered {
		earlier = d.intend(ctx, c, StepFinalIntent)
		if c.finalRefused {
			earlier = time.Time{}
		}
		out, found, err := d.sendAnew(ctx, ch, c, Target{Conv: c.conv, ReplyTo: c.replyTo}, card, c.runID+":"+StepFinal, earlier)
		if found {
			earlier = time.Time{} // the earlier attempt's message is the one shown: no double
		}
		if errors.Is(err, ErrUnreachable) {
			d.unreachable(c, ev, err)
			return nil
		}
		if err != nil {
			// Returned to the run, which is tried again (and re-emits this event) on the
			// outage schedule, then dead-lettered: not lost silently.
			c.finalRefused = !mayHavePosted(err)
			d.m.OutboundError(platform, "final_failed")
			d.log.Debug("channels: the run's closing message could not be delivered", "run", c.runID, "kind", ev.Kind, "conv", c.conv.String(), "err", err)
			return fmt.Errorf("channels: delivering %s of run %s: %w", ev.Kind, c.runID, err)
		}
		ref = out
		if c.ref.ID() != "" && !keep {
			d.removePlaceholder(ctx, ch, c, c.ref)
		}
	}
	if rest != "" && !c.fileSent {
		// Recorded before the rest is tried: a try after the rest was refused sends only the
		// rest, the closing message being in the chat already.
		c.head = answerHead{Ref: ref, Rest: rest}
		d.recordHead(ctx, c)
	}
	if err := d.sendRest(ctx, ch, c, rest); err != nil {
		// The head is in the chat now: whether it may show twice is known now, not at the try
		// that sends the rest (finishRest).
		d.countClosingDouble(ch, c, delivered, earlier)
		return fmt.Errorf("channels: delivering the rest of run %s's answer: %w", c.runID, err)
	}
	_, second := d.record(ctx, c.runID, StepFinal, ref)
	if delivered {
		d.countClosingDouble(ch, c, delivered, earlier)
		return nil // edited into the placeholder: a replay edits the same message
	}
	if second && d.dropSecond(ctx, ch, c, StepFinal, ref) {
		return nil // another attempt's closing message, recorded first, is the one shown
	}
	d.countClosingDouble(ch, c, delivered, earlier)
	d.dropStrayCard(ctx, ch, c, ref, own)
	return nil
}

// countClosingDouble counts the closing message just shown as a possible double where an
// earlier attempt may have shown it too: sent anew after that attempt's intent
// (countPossibleDouble), or edited into the placeholder (delivered) while the closing message
// that attempt may have sent anew cannot be recognised on this platform.
func (d *Delivery) countClosingDouble(ch Channel, c *runCard, delivered bool, earlier time.Time) {
	if !delivered {
		d.countPossibleDouble(ch, c, StepFinal, earlier)
		return
	}
	if !c.finalIntent.IsZero() {
		d.m.OutboundError(c.conv.Platform, "possible_double")
		d.log.Warn("channels: an earlier attempt of the run may have sent its closing message too; it may show twice", "run", c.runID)
	}
}

// dropStrayCard removes a placeholder another attempt of the run recorded while this one sent
// the closing message anew (ref): an attempt taken over while its placeholder was due posts it
// when this one has not read the card record yet. Each side writes its record, then reads the
// other's (postPlaceholder reads the final), so at least one of them sees the other and removes
// the placeholder. own, the placeholder this attempt knew of, is left alone. Skipped for a run younger than the placeholder's grace period, which no
// attempt can have posted a placeholder for.
func (d *Delivery) dropStrayCard(ctx context.Context, ch Channel, c *runCard, ref MessageRef, own string) {
	if d.opt.PlaceholderAfter > 0 && !d.receiptOlderThan(c.runID, d.opt.PlaceholderAfter) {
		return
	}
	ctx, cancel := outlive(ctx, recordGrace)
	defer cancel()
	b, found, err := d.opt.Threads.Outbound(ctx, c.runID, StepCard)
	if err != nil || !found {
		return
	}
	var card MessageRef
	if json.Unmarshal(b, &card) != nil || card.ID() == "" || card.ID() == own || slices.Contains(ref.IDs, card.ID()) {
		return
	}
	if card.Conv.IsZero() {
		card.Conv = c.conv
	}
	d.removePlaceholder(ctx, ch, c, card)
}

// mayHavePosted reports whether a send that failed with err may still have reached the
// platform: it timed out, or the connection broke, after the request may have gone out. A
// platform's answer (an error status) or a connection never made says it did not.
func mayHavePosted(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	if isPartlyPosted(err) {
		return true // it posted pieces that are still in the chat
	}
	// A timeout (context.DeadlineExceeded included) or a transport error (*url.Error) is a
	// net.Error; an answer cut short wraps io.ErrUnexpectedEOF or io.EOF.
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
