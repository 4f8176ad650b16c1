package runs

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/core/runs/internal/rdb"
)

// settleBatch bounds one flush.
const settleBatch = 256

// settleLinger is how long a flush that carries a re-hint waits for more work to share its round
// trip: a conversation's next run waits on that hint. settleQuietLinger is how long a flush of
// spent hints, counters and finished runs only waits — nobody waits on those, so at a low rate
// several runs still share one call.
const (
	settleLinger      = 2 * time.Millisecond
	settleQuietLinger = 50 * time.Millisecond
)

// settler is the settler component: workers hand it spent hints, counters and re-hints, and it
// flushes whatever accumulated in one script call, so under load many runs share one round trip.
// The same call adds the counters to the current minute's bucket of the recent throughput
// (Queue.Recent), so the rate costs no round trip of its own.
//
// While Redis is unreachable it keeps the batch and tries it again with a backoff until Redis
// answers (workers that hand it more wait meanwhile: they could not have settled either), and
// gives it up only once the pool stops (the drain deadline, or the end of shutdown) and three
// tries failed; an error Redis answered is tried three times, as before.
type settler struct {
	counters *rdb.Counters
	log      *slog.Logger
	in       chan settleItem
	fails    *failureLog
	// giveUp ends the retries of a batch Redis cannot take, after at most three tries: the
	// pool's drain deadline, or the end of its shutdown. start sets it.
	giveUp context.Context
	stop   context.CancelFunc
}

type settleItem struct {
	ack     string // spent hint id
	hint    string // conversation tag to hint again
	counter string
	done    string // finished run (rdb.Member) to remove from the admitted set
}

func newSettler(counters *rdb.Counters, log *slog.Logger) *settler {
	return &settler{counters: counters, log: log, in: make(chan settleItem, 4*settleBatch),
		fails: newFailureLog(log, "settler", "runs: settling finished runs failed; keeping them to retry")}
}

// start flushes in a goroutine of wg until shutdown, and then what is left; giveUp ends the
// retries of a batch Redis cannot take (see settler.giveUp).
func (s *settler) start(ctx, giveUp context.Context, wg *sync.WaitGroup) {
	s.giveUp = giveUp
	ctx, s.stop = context.WithCancel(ctx)
	wg.Go(func() { s.run(ctx) })
}

// shutdown tells the settler to flush what is left and stop; wait on start's group for it.
func (s *settler) shutdown() { s.stop() }

func (s *settler) add(it settleItem) { s.in <- it }

// run flushes until stop is done, then flushes what is left.
func (s *settler) run(stop context.Context) {
	for {
		select {
		case it := <-s.in:
			s.flush(it)
		case <-stop.Done():
			for {
				select {
				case it := <-s.in:
					s.flush(it)
				default:
					return
				}
			}
		}
	}
}

func (s *settler) flush(first settleItem) {
	var st rdb.Settlement
	addItem := func(it settleItem) {
		if it.ack != "" {
			st.Acks = append(st.Acks, it.ack)
		}
		if it.hint != "" {
			st.Hints = append(st.Hints, it.hint)
		}
		if it.counter != "" {
			if st.Counters == nil {
				st.Counters = map[string]int64{}
			}
			st.Counters[it.counter]++
		}
		if it.done != "" {
			st.Done = append(st.Done, it.done)
		}
	}
	addItem(first)
	// Linger so that many runs share one call: briefly once a re-hint is in the batch (a run
	// waits on it), longer while only counters, spent hints and finished runs are.
	start := time.Now()
	wait := settleQuietLinger
	if first.hint != "" {
		wait = settleLinger
	}
	linger := time.NewTimer(wait)
	defer linger.Stop()
collect:
	for n := 1; n < settleBatch; n++ {
		select {
		case it := <-s.in:
			addItem(it)
			if it.hint != "" && wait != settleLinger {
				wait = settleLinger
				linger.Reset(max(0, settleLinger-time.Since(start)))
			}
		case <-linger.C:
			break collect
		}
	}
	// Flushing must survive shutdown: each call has its own short deadline, not the pool's
	// context.
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := s.counters.Settle(ctx, st)
		cancel()
		if err == nil {
			s.fails.ok()
			return
		}
		// Three tries for an error Redis answered; while it is unreachable, until the pool stops.
		if try >= 3 && (!unreachable(err) || s.giveUp.Err() != nil) {
			// Spent hints come back through the recoverer and are acknowledged then, and the
			// reconciliation removes the finished runs from the admitted set; only counters are
			// lost.
			s.log.Error("runs: settling finished runs failed; counters may be low", "acks", len(st.Acks), "tries", try, "err", err)
			return
		}
		s.fails.fail(err, "acks", len(st.Acks), "hints", len(st.Hints))
		wait := time.NewTimer(outageBackoff(try))
		select {
		case <-wait.C:
		case <-s.giveUp.Done():
			wait.Stop()
		}
	}
}
