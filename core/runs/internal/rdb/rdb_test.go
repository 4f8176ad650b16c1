package rdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newStore returns a store on the test Redis under a fresh prefix, deleted afterwards.
func newStore(t *testing.T) *Store {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("the tests need Redis on 127.0.0.1:6379: %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "sbtest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		it := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
		for it.Next(ctx) {
			c.Del(ctx, it.Val())
		}
		_ = c.Close()
	})
	return New(c, prefix)
}

const tag = "{conv:0123456789abcdef0123456789abcdef}"

var ctx = context.Background()

func ms(d time.Duration) int64 { return time.Now().Add(d).UnixMilli() }

func mustEnqueue(t *testing.T, s *Store, probe bool, id string, max int, interrupt bool) EnqueueResult {
	t.Helper()
	r, err := s.Mailboxes().Enqueue(ctx, EnqueueReq{Tag: tag, Probe: probe, Entry: Entry(id, []byte("env-"+id)), MaxPerConv: max, Interrupt: interrupt, Now: ms(0), ConvKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ids(t *testing.T, s *Store) string {
	t.Helper()
	got, err := s.Mailboxes().MailboxIDs(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(got)
}

func admit(t *testing.T, s *Store, runID string, max int64, hint string) (string, int64) {
	t.Helper()
	st, at, err := s.Admissions().Ready(ctx, ReadyReq{Admit: AdmitCheck, Member: Member(tag, runID), MaxPending: max, Hint: hint})
	if err != nil {
		t.Fatal(err)
	}
	return st, at
}

func pending(t *testing.T, s *Store) int64 {
	t.Helper()
	n, err := s.Admissions().Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func consumers(t *testing.T, s *Store) string {
	t.Helper()
	cs, err := s.Client().XInfoConsumers(ctx, s.Hints().ReadyKey(), s.group).Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s:%d", c.Name, c.Pending))
	}
	return fmt.Sprint(out)
}
