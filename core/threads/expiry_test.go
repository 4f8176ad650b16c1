package threads

import (
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestDueExpiriesTakenOnce: each due entry goes to exactly one of many concurrent callers, and
// entries not yet due stay.
func TestDueExpiriesTakenOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		s := New(c, Options{Prefix: uniquePrefix(t, c)})
		now := time.UnixMilli(1_800_000_000_000)
		for i := range 50 {
			if err := s.Clarifications().ScheduleExpiry(ctx, "a"+string(rune('A'+i)), "telegram::42:", now.Add(-time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Clarifications().ScheduleExpiry(ctx, "later", "telegram::42:", now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for {
					due, err := s.Clarifications().DueExpiries(ctx, now, 4)
					if err != nil {
						t.Error(err)
						return
					}
					if len(due) == 0 {
						return
					}
					mu.Lock()
					for _, e := range due {
						seen[e.ID]++
						if e.ConvKey != "telegram::42:" {
							t.Errorf("entry %+v lost its conversation", e)
						}
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != 50 {
			t.Errorf("%d entries taken, want 50", len(seen))
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%s taken %d times", id, n)
			}
		}
		if due, _ := s.Clarifications().DueExpiries(ctx, now.Add(2*time.Minute), 10); len(due) != 1 || due[0].ID != "later" {
			t.Errorf("later entry: %+v", due)
		}
	})
}
