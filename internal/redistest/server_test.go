package redistest

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRestartReplaysAcknowledgedWrites proves the server the outage tests stop and restart keeps
// every acknowledged write across a SIGTERM and a SIGKILL (AOF, fsync always), on the same
// address, and that it is unreachable while stopped.
func TestRestartReplaysAcknowledgedWrites(t *testing.T) {
	s := Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			key := fmt.Sprintf("k%d", i)
			if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"n", key}}).Err(); err != nil {
				t.Fatal(err)
			}
			s.Stop(sig)
			if s.Running() {
				t.Fatal("Running after Stop")
			}
			if err := c.Ping(ctx).Err(); err == nil {
				t.Fatal("PING answered while the server is stopped")
			}
			s.Restart()
			if got, err := c.Get(ctx, key).Result(); err != nil || got != "v" {
				t.Fatalf("after restart %s = %q, %v; want the acknowledged write back", key, got, err)
			}
			if n, err := c.XLen(ctx, "s").Result(); err != nil || n != int64(i+1) {
				t.Fatalf("stream length %d, %v after restart; want %d", n, err, i+1)
			}
		})
	}
}
