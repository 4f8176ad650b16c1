package redisscan

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-bot/switchboard/internal/redistest"
)

func TestEachVisitsEveryMatchingKey(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	ctx := context.Background()
	for i := range 450 {
		if err := c.Set(ctx, fmt.Sprintf("p:{conv:%d}:st", i), 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Set(ctx, "p:{conv:x}:q", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	if err := Each(ctx, c, "p:{conv:*}:st", func(key string) error { seen[key] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 450 || seen["p:{conv:x}:q"] {
		t.Fatalf("%d keys visited, want the 450 matching ones", len(seen))
	}
	stop := errors.New("stop")
	n := 0
	err := Each(ctx, c, "p:{conv:*}:st", func(string) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("err %v after %d calls, want fn's error after the first", err, n)
	}
}
