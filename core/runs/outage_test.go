package runs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestFailureLogOneLinePerSpell proves a failure repeated in a burst is logged once, that its
// end is logged once with the count, and that the next spell is logged again.
func TestFailureLogOneLinePerSpell(t *testing.T) {
	var buf bytes.Buffer
	fl := newFailureLog(slog.New(slog.NewTextHandler(&buf, nil)), "fetcher", "runs: reading hints failed; retrying")
	for range 100 {
		fl.fail(errors.New("connection refused"))
	}
	fl.ok()
	fl.ok() // working on: nothing to say
	fl.fail(errors.New("connection refused"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines for two spells of failures, want 3:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{"reading hints failed", "fetcher recovered", "reading hints failed"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d is %q, want it to say %q", i, lines[i], want)
		}
	}
	if !strings.Contains(lines[1], "failures=100") {
		t.Errorf("the recovery line %q does not count the 100 failures", lines[1])
	}
}

// TestUnreachableTellsOutagesFromRefusals proves the classification every retry loop relies
// on: a refused connection, a dropped one or a timeout is an outage to wait out; Redis refusing
// the command itself, a cancelled call or a closed client is not.
func TestUnreachableTellsOutagesFromRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	up := realRedis(t)
	_, refusal := up.Do(ctx, "NOSUCHCOMMAND").Result()
	closedPort := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
	defer closedPort.Close()
	refused := closedPort.Ping(ctx).Err()
	closed := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	_ = closed.Close()
	closedErr := closed.Ping(ctx).Err()
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", fmt.Errorf("rdb: read hints: %w", refused), true},
		{"connection dropped", fmt.Errorf("rdb: settle: %w", io.EOF), true},
		{"timed out", fmt.Errorf("rdb: settle: %w", context.DeadlineExceeded), true},
		{"command refused", fmt.Errorf("rdb: claim: %w", refusal), false},
		{"cancelled", fmt.Errorf("rdb: claim: %w", context.Canceled), false},
		{"client closed", closedErr, false},
		{"no error", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.err == nil && c.want {
				t.Fatal("bad case")
			}
			if got := unreachable(c.err); got != c.want {
				t.Errorf("unreachable(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

// TestOutageBackoffGrowsToItsCap proves the retry loops' waits double from the base and stop
// growing at the cap, so a long outage costs a call every couple of seconds, not a hot loop.
func TestOutageBackoffGrowsToItsCap(t *testing.T) {
	for n, want := range map[int]time.Duration{1: outageRetryBase, 2: 2 * outageRetryBase, 3: 4 * outageRetryBase, 8: outageRetryMax, 1000: outageRetryMax} {
		for range 20 {
			if got := outageBackoff(n); got < want/2 || got > want {
				t.Fatalf("outageBackoff(%d) = %v, want within [%v, %v]", n, got, want/2, want)
			}
		}
	}
}
