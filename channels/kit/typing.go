package kit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// TypingSignals sends an adapter's typing signals off its caller's path. The router signals at
// receipt, inside the hand-over of an update, and delivery when a run starts; neither should wait
// for a platform call that only shows "typing…". Signal returns at once; a signal still showing —
// sent less than Lasts ago to the same conversation, with no message posted there since (a posted
// message ends the platform's indicator: Sent says so) — is not sent again; one queued when a
// message is posted to its conversation is dropped, so a late signal never shows "typing…" under
// an answer already given. With After set, a signal waits that long before it is sent and is
// dropped if a message is posted meanwhile: a run answered within After shows no "typing…" and
// costs no platform call. At most Workers signals are in flight; one arriving while Queue are
// waiting is dropped and logged at debug, as a signal is best effort.
type TypingSignals struct {
	opt    TypingOptions
	now    func() time.Time
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the senders running

	mu      sync.Mutex
	showing map[string]typingState
	pending []typingJob
	running int // senders; each exits when pending is empty, so an idle TypingSignals holds none
	swept   time.Time
	closed  bool
}

// DefaultTypingAfter is how long the adapters' typing signals wait before they are sent
// (TypingOptions.After): a run answered sooner — a command, a quick answer, or each of a burst
// of messages answered one after another — shows its answer without a "typing…" before it, and
// costs one platform call instead of two, which counts where rate limits bind; a slower one
// shows "typing…" half a second after the message, the placeholder after the grace period.
const DefaultTypingAfter = 500 * time.Millisecond

// TypingOptions configure TypingSignals; zero fields take the defaults.
type TypingOptions struct {
	// Lasts is how long the platform shows one signal (Telegram 5 s, Discord 10 s); a little
	// less is safer (default 4 s).
	Lasts time.Duration
	// Timeout bounds one signal's call (default 2 s).
	Timeout time.Duration
	// After is how long a signal waits before it is sent (default 0: at once); adapters pass
	// DefaultTypingAfter.
	After time.Duration
	// Workers signals are sent at once (default 8); Queue more may wait (default 1,024).
	Workers, Queue int
	Logger         *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// typingState is a conversation's last signal: when it was sent (or queued), and the number of
// messages posted there before it (gen), which tells whether one was posted since.
type typingState struct {
	at  time.Time
	gen uint64
	// posts counts Sent calls for the conversation; a signal is still showing while posts == gen.
	posts uint64
}

type typingJob struct {
	key  string
	gen  uint64
	due  time.Time // when it may be sent (Signal's time plus After)
	send func(ctx context.Context) error
}

// NewTypingSignals returns TypingSignals; its senders run only while signals wait.
func NewTypingSignals(opt TypingOptions) *TypingSignals {
	if opt.Lasts <= 0 {
		opt.Lasts = 4 * time.Second
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 2 * time.Second
	}
	if opt.Workers <= 0 {
		opt.Workers = 8
	}
	if opt.Queue <= 0 {
		opt.Queue = 1024
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	s := &TypingSignals{opt: opt, now: opt.Now, showing: map[string]typingState{}}
	if s.now == nil {
		s.now = time.Now
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Signal sends a typing signal to the conversation key with send, unless one is still showing
// there; it never waits for the platform. After Close it does nothing.
func (s *TypingSignals) Signal(key string, send func(ctx context.Context) error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	st, ok := s.showing[key]
	if ok && st.posts == st.gen && now.Sub(st.at) < s.opt.Lasts {
		return
	}
	s.sweep(now)
	if len(s.pending) >= s.opt.Queue {
		s.opt.Logger.Debug("channels: typing signal dropped; too many waiting", "conv", key)
		return
	}
	st.at, st.gen = now, st.posts
	s.showing[key] = st
	s.pending = append(s.pending, typingJob{key: key, gen: st.gen, due: now.Add(s.opt.After), send: send})
	if s.running < s.opt.Workers {
		s.running++
		s.wg.Add(1)
		go s.work()
	}
}

// Sent tells that a message was posted to the conversation key: the platform's indicator
// stopped, so the next signal goes out, and one still waiting is dropped.
func (s *TypingSignals) Sent(key string) {
	s.mu.Lock()
	if st, ok := s.showing[key]; ok {
		st.posts++
		s.showing[key] = st
	}
	s.mu.Unlock()
}

// sweep forgets conversations whose signal stopped showing, at most once per Lasts; the caller
// holds s.mu.
func (s *TypingSignals) sweep(now time.Time) {
	if now.Sub(s.swept) < s.opt.Lasts {
		return
	}
	s.swept = now
	for k, st := range s.showing {
		if now.Sub(st.at) >= s.opt.Lasts {
			delete(s.showing, k)
		}
	}
}

// work sends waiting signals until none is left (or Close), then exits.
func (s *TypingSignals) work() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if len(s.pending) == 0 || s.closed {
			s.running--
			s.mu.Unlock()
			return
		}
		job := s.pending[0]
		s.pending[0] = typingJob{}
		s.pending = s.pending[1:]
		s.mu.Unlock()
		if !s.waitUntil(job.due) {
			continue // closed: the next turn of the loop exits
		}
		s.mu.Lock()
		st, ok := s.showing[job.key]
		stale := ok && st.posts != job.gen
		s.mu.Unlock()
		if stale {
			continue // a message was posted meanwhile: the signal would show under it
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.opt.Timeout)
		if err := job.send(ctx); err != nil {
			s.opt.Logger.Debug("channels: typing signal failed", "conv", job.key, "err", err)
		}
		cancel()
	}
}

// waitUntil waits for the clock to reach due; it reports false when Close came first.
func (s *TypingSignals) waitUntil(due time.Time) bool {
	d := due.Sub(s.now())
	if d <= 0 {
		return s.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// Close stops the senders: a signal in flight is cancelled, waiting ones are dropped, later ones
// ignored. Safe to call more than once.
func (s *TypingSignals) Close() {
	s.mu.Lock()
	s.closed = true
	s.pending = nil
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}
