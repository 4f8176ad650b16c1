package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
	"github.com/switchboard-bot/switchboard/render"
)

// Delivery defaults applied to zero Options fields.
const (
	DefaultMaxRetryWait      = 30 * time.Second
	DefaultRateLimitAttempts = 5
	DefaultCardMemory        = time.Hour
	// DefaultPlaceholderAfter is the grace period before a run's "working" placeholder is posted
	// (Options.PlaceholderAfter); cmd/bot passes it. A run answered within it shows one
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

// Options configure a Delivery. Channels and Records are required.
type Options struct {
	// Channels by conv.Key.Platform.
	Channels map[string]channels.Channel
	// Records keeps the runs' outbound records (a threads.Store's Records).
	Records Records
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
	opt Options
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

	// The concerns of a run's delivery, each with its own methods: the placeholder and typing
	// signals, the stream of an answer, the closing message, sending and editing with the
	// platforms' limits, and the replay records.
	ph placeholders
	sm streams
	cl closer
	sn *sender
	rs *records

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
	ref      channels.MessageRef
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
	stale channels.MessageRef
}

// New checks opt and returns a Delivery.
func New(opt Options) (*Delivery, error) {
	if len(opt.Channels) == 0 || opt.Records == nil {
		return nil, errors.New("delivery: needs channels and a Records store")
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
	d.ph, d.sm, d.cl = placeholders{d}, streams{d}, closer{d}
	d.sn = &sender{maxWait: opt.MaxRetryWait, attempts: opt.RateLimitAttempts, log: d.log, m: d.m, now: d.now}
	d.rs = &records{store: opt.Records, maxWait: opt.MaxRetryWait, log: d.log, m: d.m, now: d.now}
	d.afterFunc = func(wait time.Duration, f func()) stopper { return time.AfterFunc(wait, f) }
	d.typingAfterFunc = d.afterFunc
	d.closing, d.stopClosing = context.WithCancel(context.Background())
	return d, nil
}

// Records is where delivery keeps what each run showed, so that a replay edits or skips instead
// of posting twice; *threads.Records implements it.
type Records interface {
	// RecordOutbound stores value for the run's step the first time only (SET NX): first
	// reports whether this call stored it, existing is what an earlier call stored.
	RecordOutbound(ctx context.Context, runID, step string, value []byte) (first bool, existing []byte, err error)
	// Outbound reads what RecordOutbound stored for the run's step.
	Outbound(ctx context.Context, runID, step string) (value []byte, found bool, err error)
	// Lookup reads the records of several steps (and marks) of a run at once.
	Lookup(ctx context.Context, runID string, steps, markKeys []string) (threads.RunRecords, error)
}

var _ Records = (*threads.Records)(nil)

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
	d.ph.stopGrace(c)
	d.ph.stopTyping(c)
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
		if _, ok := ch.(channels.Streamer); !ok {
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
			d.rs.load(ctx, c)
		}
	}
	if c.stale.ID() != "" {
		d.sm.staleStream(ctx, ch, c, c.stale)
		c.stale = channels.MessageRef{}
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
		d.sm.restart(ctx, ch, c)
		d.ph.start(ctx, ch, c, ev)
	case runs.EventProgress:
		c.progress = progressText(ev)
		if ev.Tool == "" && ev.Text != "" {
			// A notice (the model is unavailable; the answer will follow) has no place in a
			// stream of the answer: the stream's message becomes the card that shows it. It
			// does not wait out the grace period either: the user is told now, and the answer,
			// however soon it follows, replaces it.
			d.sm.leaveStream(ctx, ch, c)
			if c.owed {
				d.ph.stopGrace(c)
				d.ph.placeholderDue(ctx, ch, c)
				return nil
			}
		}
		d.update(ctx, ch, c)
	case runs.EventSubagentStarted, runs.EventSubagentResult:
		d.sm.subagentEvent(ctx, ch, c, ev)
	case runs.EventAnswerDelta:
		d.sm.answerDelta(ctx, ch, c, ev)
	case runs.EventApproval:
		d.approvalCard(ctx, ch, c, ev)
	case runs.EventFinal, runs.EventFailed, runs.EventCancelled, runs.EventClarification:
		d.stopTimers(c) // a placeholder still owed is never posted: the closing card is the message
		err := d.cl.finish(ctx, ch, c, ev)
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

// update edits the card with the latest state, at most once per the platform's EditEvery; a
// skipped edit is made when the interval ends (latest wins).
func (d *Delivery) update(ctx context.Context, ch channels.Channel, c *runCard) {
	if _, ok := ch.(channels.Editor); !ok || c.ref.ID() == "" {
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
func (d *Delivery) editProgress(ctx context.Context, ch channels.Channel, c *runCard) {
	ed, ok := ch.(channels.Editor)
	if !ok {
		return
	}
	card := d.workingCard(c)
	platform := c.conv.Platform
	var ref channels.MessageRef
	err := channels.RetryRateLimited(ctx, d.opt.MaxRetryWait, d.opt.RateLimitAttempts, func(ctx context.Context) error {
		var err error
		ref, err = ed.Edit(ctx, c.ref, channels.Message{Card: &card})
		return err
	})
	c.lastEdit = d.now()
	switch {
	case err == nil:
		if len(ref.IDs) > 0 {
			c.ref = ref
		}
	case errors.Is(err, channels.ErrNotModified):
	case errors.Is(err, channels.ErrMessageGone):
		d.m.OutboundError(platform, "message_gone")
		if ref, err := d.sn.send(ctx, ch, channels.Target{Conv: c.conv, ReplyTo: c.replyTo}, card); err == nil {
			c.ref = ref
		}
	default:
		kind := "edit_failed"
		var rl *channels.RateLimitError
		if errors.As(err, &rl) {
			kind = "rate_limited"
		}
		d.m.OutboundError(platform, kind)
		d.log.Debug("channels: progress edit failed", "run", c.runID, "err", err)
	}
}
