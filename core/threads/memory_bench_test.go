package threads

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/internal/redistest"
)

// BenchmarkIdleConversationMemory measures what an idle conversation costs Redis: 100,000
// threads, each with one stored turn (a question and its answer, as the lead writes them), on a
// private redis-server, reported as used_memory per conversation. Run:
//
//	go test -run '^$' -bench IdleConversationMemory -benchtime=1x ./core/threads/
//
// The per-run records a conversation also keeps for a while (the run record and outbound
// records for 7 days, the dedupe claim and seen mark for 24 h) are measured end to end by the
// load benchmark's redis-kb/chat.
func BenchmarkIdleConversationMemory(b *testing.B) {
	for _, turns := range []int{1, 10} {
		b.Run(fmt.Sprintf("%dturns", turns), func(b *testing.B) {
			for range b.N {
				idleMemory(b, 100_000, turns)
			}
		})
	}
}

func idleMemory(b *testing.B, convs, turns int) {
	srv := redistest.Start(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 32})
	defer c.Close()
	ctx := context.Background()
	s := New(c, Options{Prefix: "sb:", HistoryTurns: 50})
	before := usedMemory(b, c)
	turn := []json.RawMessage{
		json.RawMessage(`{"seq":0,"kind":"turn/start","turn":1}`),
		json.RawMessage(`{"seq":1,"kind":"user/message","turn":1,"source":"user","content":"a question of a few words"}`),
		json.RawMessage(`{"seq":2,"kind":"assistant/message","turn":1,"step":1,"content":"an answer, somewhat longer than the question it answers"}`),
		json.RawMessage(`{"seq":3,"kind":"turn/end","turn":1,"reason":"completed"}`),
	}
	var wg sync.WaitGroup
	const workers = 32
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < convs; i += workers {
				key := "telegram::" + strconv.Itoa(100_000+i) + ":"
				th, _, err := s.Conversations().Ensure(ctx, key)
				for t := 0; err == nil && t < turns; t++ {
					err = s.History().AppendTurn(ctx, key, th.ID, turn)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	after := usedMemory(b, c)
	b.ReportMetric(float64(after-before)/float64(convs), "bytes/conv")
	b.ReportMetric(float64(after-before)/(1<<20), "MB-total")
	b.ReportMetric(0, "ns/op")
}

func usedMemory(b *testing.B, c *redis.Client) int64 {
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatal("no used_memory in INFO memory")
	return 0
}
