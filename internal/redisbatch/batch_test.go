package redisbatch

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

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var ctx = context.Background()

// gate is a go-redis hook that counts round trips and holds the first ones until released, so
// that a test can queue calls behind pipelines in flight. The connection's handshake passes
// uncounted.
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

func handshake(cmd redis.Cmder) bool { return cmd.Name() == "hello" || cmd.Name() == "client" }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !handshake(cmd) {
			g.wait()
		}
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && !handshake(cmds[0]) {
			g.wait()
		}
		return next(ctx, cmds)
	}
}

// setup returns a Batcher on the real Redis, a unique key prefix (its keys are deleted when the
// test ends) and a gate holding the first hold round trips.
func setup(t *testing.T, hold int64) (*Batcher, string, *gate) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", PoolSize: 8})
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("the tests need Redis on 127.0.0.1:6379: %v", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "sbtest:redisbatch:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		keys, _ := c.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
		_ = c.Close()
	})
	g := &gate{release: make(chan struct{})}
	g.hold.Store(hold)
	c.AddHook(g)
	return New(c), prefix, g
}

// queued is how many calls wait for a flush.
func (b *Batcher) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

var pushArg = redis.NewScript(`redis.call('RPUSH', KEYS[1], ARGV[1]) return ARGV[1]`)

func waitQueued(t *testing.T, b *Batcher, n int) {
	t.Helper()
	poll.Until(t, fmt.Sprintf("%d queued calls", n), func() bool { return b.queued() == n })
}

// TestEvalSharesPipelinesAmongConcurrentCallers proves concurrent calls share round trips and
// each caller's calls land in the order it made them.
func TestEvalSharesPipelinesAmongConcurrentCallers(t *testing.T) {
	b, prefix, g := setup(t, Flights)
	key := prefix + "{t}:list"
	const callers, each = 40, 5
	var wg sync.WaitGroup
	errs := make(chan error, callers*each)
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				want := fmt.Sprintf("%d-%d", c, i)
				got, err := b.Eval(ctx, pushArg, []string{key}, want).Text()
				if err != nil || got != want {
					errs <- fmt.Errorf("caller %d call %d: got %q, %v", c, i, got, err)
				}
			}
		})
	}
	// The flights are held; every other caller's first call queues behind them.
	waitQueued(t, b, callers-Flights)
	close(g.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if trips := g.trips.Load(); trips >= callers*each {
		t.Errorf("%d calls took %d round trips, want shared pipelines", callers*each, trips)
	}
	all, err := b.c.LRange(ctx, key, 0, -1).Result()
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

// TestDoKeepsACallersCommandsTogether proves a caller's several commands are sent together and
// in order, each with its own result — a missing key is redis.Nil on that command alone.
func TestDoKeepsACallersCommandsTogether(t *testing.T) {
	b, prefix, g := setup(t, Flights)
	var wg sync.WaitGroup
	type call struct {
		set  *redis.StatusCmd
		get  *redis.StringCmd
		miss *redis.StringCmd
	}
	calls := make([]call, 12)
	for i := range calls {
		wg.Go(func() {
			k := prefix + strconv.Itoa(i)
			c := call{set: redis.NewStatusCmd(ctx, "set", k, "v"+strconv.Itoa(i)), get: redis.NewStringCmd(ctx, "get", k),
				miss: redis.NewStringCmd(ctx, "get", k+":missing")}
			b.Do(ctx, c.set, c.get, c.miss)
			calls[i] = c
		})
	}
	waitQueued(t, b, len(calls)-Flights)
	close(g.release)
	wg.Wait()
	for i, c := range calls {
		if c.set.Err() != nil || c.get.Val() != "v"+strconv.Itoa(i) || !errors.Is(c.miss.Err(), redis.Nil) {
			t.Errorf("call %d: set %v, get %q %v, miss %v; want ok, %q, redis.Nil", i, c.set.Err(), c.get.Val(), c.get.Err(), c.miss.Err(), "v"+strconv.Itoa(i))
		}
	}
	if trips := g.trips.Load(); trips > 3 {
		t.Errorf("%d callers took %d round trips, want at most 3 (the held flights and the rest)", len(calls), trips)
	}
}

func TestEvalFallsBackToEvalForAnUnknownScript(t *testing.T) {
	b, prefix, _ := setup(t, 0)
	var r [8]byte
	_, _ = rand.Read(r[:])
	// A script body never seen by this Redis: EVALSHA answers NOSCRIPT.
	fresh := redis.NewScript("-- " + hex.EncodeToString(r[:]) + "\nreturn ARGV[1]")
	for i, want := range []string{"first", "second"} { // then the script is cached
		got, err := b.Eval(ctx, fresh, []string{prefix + "{t}:x"}, want).Text()
		if err != nil || got != want {
			t.Fatalf("call %d = %q, %v; want %q", i, got, err, want)
		}
	}
}

func TestEvalReportsEachCallersError(t *testing.T) {
	b, prefix, g := setup(t, Flights)
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
			results[i] = b.Eval(ctx, sc, []string{prefix + "{t}:x"}, strconv.Itoa(i)).Err()
		})
	}
	waitQueued(t, b, len(results)-Flights)
	close(g.release)
	wg.Wait()
	for i, err := range results {
		if wantErr := i%2 == 1; (err != nil) != wantErr || wantErr && !strings.Contains(err.Error(), "bad "+strconv.Itoa(i)) {
			t.Errorf("call %d: err = %v, want error %v", i, err, wantErr)
		}
	}
}

func TestEndedContextSendsNothing(t *testing.T) {
	b, prefix, _ := setup(t, 0)
	key := prefix + "{t}:list"
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Eval(ended, pushArg, []string{key}, "x").Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Eval with an ended ctx = %v, want context.Canceled", err)
	}
	if n, _ := b.c.LLen(ctx, key).Result(); n != 0 {
		t.Errorf("the script ran: %d entries", n)
	}
}
