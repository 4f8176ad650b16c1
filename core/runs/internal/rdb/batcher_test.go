package rdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// gate is a go-redis hook that counts round trips of scripts and holds the first ones until
// released, so that a test can queue calls behind pipelines in flight. Other commands (the
// connection's handshake, the test's reads) pass uncounted.
type gate struct {
	trips   atomic.Int64
	hold    atomic.Int64 // how many of the first round trips to hold
	release chan struct{}
}

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) wait() {
	if g.trips.Add(1) <= g.hold.Load() {
		<-g.release
	}
}

func isScript(cmd redis.Cmder) bool { return cmd.Name() == "evalsha" || cmd.Name() == "eval" }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isScript(cmd) {
			g.wait()
		}
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && isScript(cmds[0]) {
			g.wait()
		}
		return next(ctx, cmds)
	}
}

func gatedStore(t *testing.T, hold int64) (*Store, *gate) {
	t.Helper()
	s := newStore(t)
	g := &gate{release: make(chan struct{})}
	g.hold.Store(hold)
	s.c.AddHook(g)
	return s, g
}

// eventually polls cond until it holds, failing after five seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// queued is how many calls wait for a flush.
func (g *group[T]) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

var scriptPushArg = redis.NewScript(`redis.call('RPUSH', KEYS[1], ARGV[1]) return ARGV[1]`)

func TestEvalSharesPipelinesAmongConcurrentCallers(t *testing.T) {
	s, g := gatedStore(t, pipelineFlights)
	key := s.prefix + "{t}:list"
	const callers, each = 40, 5
	var wg sync.WaitGroup
	errs := make(chan error, callers*each)
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				want := fmt.Sprintf("%d-%d", c, i)
				got, err := s.eval(ctx, scriptPushArg, []string{key}, want).Text()
				if err != nil || got != want {
					errs <- fmt.Errorf("caller %d call %d: got %q, %v", c, i, got, err)
				}
			}
		})
	}
	// Both flights are held; every other caller's first call queues behind them.
	eventually(t, "the other callers to queue", func() bool { return s.pipe.queued() == callers-pipelineFlights })
	close(g.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if trips := g.trips.Load(); trips >= callers*each {
		t.Errorf("%d calls took %d round trips, want shared pipelines", callers*each, trips)
	}
	// Every caller's calls landed in the order it made them.
	all, err := s.c.LRange(ctx, key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != callers*each {
		t.Fatalf("%d entries, want %d", len(all), callers*each)
	}
	next := map[string]int{}
	for _, e := range all {
		c, i, _ := strings.Cut(e, "-")
		n, _ := strconv.Atoi(i)
		if n != next[c] {
			t.Fatalf("caller %s: call %d landed before call %d", c, n, next[c])
		}
		next[c]++
	}
}

func TestEvalFallsBackToEvalForAnUnknownScript(t *testing.T) {
	s := newStore(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	// A script body never seen by this Redis: EVALSHA answers NOSCRIPT.
	fresh := redis.NewScript("-- " + hex.EncodeToString(b[:]) + "\nreturn ARGV[1]")
	for i, want := range []string{"first", "second"} { // then the script is cached
		got, err := s.eval(ctx, fresh, []string{s.prefix + "{t}:x"}, want).Text()
		if err != nil || got != want {
			t.Fatalf("call %d = %q, %v; want %q", i, got, err, want)
		}
	}
}

func TestEvalReportsEachCallersError(t *testing.T) {
	s, g := gatedStore(t, pipelineFlights)
	bad := redis.NewScript(`return redis.error_reply('ERR bad ' .. ARGV[1])`)
	good := redis.NewScript(`return ARGV[1]`)
	var wg sync.WaitGroup
	results := make([]error, 10)
	for i := range results {
		wg.Go(func() {
			sc := good
			if i%2 == 1 {
				sc = bad
			}
			results[i] = s.eval(ctx, sc, []string{s.prefix + "{t}:x"}, strconv.Itoa(i)).Err()
		})
	}
	eventually(t, "the other callers to queue", func() bool { return s.pipe.queued() == len(results)-pipelineFlights })
	close(g.release)
	wg.Wait()
	for i, err := range results {
		if wantErr := i%2 == 1; (err != nil) != wantErr || wantErr && !strings.Contains(err.Error(), "bad "+strconv.Itoa(i)) {
			t.Errorf("call %d: err = %v, want error %v", i, err, wantErr)
		}
	}
}

func TestEvalWithAnEndedContextSendsNothing(t *testing.T) {
	s := newStore(t)
	key := s.prefix + "{t}:list"
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.eval(ended, scriptPushArg, []string{key}, "x").Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("eval with an ended ctx = %v, want context.Canceled", err)
	}
	if n, _ := s.c.LLen(ctx, key).Result(); n != 0 {
		t.Errorf("the script ran: %d entries", n)
	}
}
