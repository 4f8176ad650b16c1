package rdb

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// minute is a unix minute well after 1970, so the tests' arithmetic is the production one.
const minute = int64(29_000_000)

func at(m int64, into time.Duration) int64 { return m*minuteMs + into.Milliseconds() }

func TestRecentWindow(t *testing.T) {
	buckets := map[int64]map[string]int64{
		minute - 61: {"answered": 1000}, // outside every window
		minute - 60: {"answered": 60, "failed": 6},
		minute - 59: {"answered": 7},
		minute - 1:  {"answered": 10, "failed": 1},
		minute:      {"answered": 3},
		minute + 1:  {"answered": 500}, // ahead of the clock
	}
	cases := []struct {
		name string
		now  int64
		n    int
		want map[string]int64
	}{
		{"minute at its first ms: the whole previous minute", at(minute, 0), 1, map[string]int64{"answered": 13, "failed": 1}},
		{"minute halfway: half the previous minute", at(minute, 30*time.Second), 1, map[string]int64{"answered": 8, "failed": 1}},
		{"minute, a quarter of the previous one left (2.5 rounds up)", at(minute, 45*time.Second), 1, map[string]int64{"answered": 6, "failed": 0}},
		{"minute at its last ms: only the current minute", at(minute, time.Minute-time.Millisecond), 1, map[string]int64{"answered": 3, "failed": 0}},
		{"hour at a minute's first ms: the minute 60 back counts whole", at(minute, 0), 60, map[string]int64{"answered": 80, "failed": 7}},
		{"hour halfway through the minute", at(minute, 30*time.Second), 60, map[string]int64{"answered": 50, "failed": 4}},
		{"hour at the minute's last ms", at(minute, time.Minute-time.Millisecond), 60, map[string]int64{"answered": 20, "failed": 1}},
		{"hour a minute later: the minute 61 back is out", at(minute+1, 0), 60, map[string]int64{"answered": 500 + 3 + 10 + 7, "failed": 1}},
		{"n above the kept minutes is an hour", at(minute, 0), 1000, map[string]int64{"answered": 80, "failed": 7}},
		{"n below one is a minute", at(minute, 0), 0, map[string]int64{"answered": 13, "failed": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Recent{Now: tc.now, Minutes: buckets}.Window(tc.n)
			if !maps.Equal(got, tc.want) {
				t.Errorf("Window(%d) at %d = %v, want %v", tc.n, tc.now, got, tc.want)
			}
		})
	}
	if got := (Recent{Now: at(minute, 0)}).Window(60); len(got) != 0 {
		t.Errorf("Window of nothing = %v", got)
	}
}

func TestParseRecent(t *testing.T) {
	cases := []struct {
		name    string
		reply   []any
		want    map[int64]map[string]int64
		wantErr bool
	}{
		{"buckets and the marker", []any{int64(5), "m", "29000000", "29000000:answered", "3", "29000000:failed", "1", "28999999:answered", "2"},
			map[int64]map[string]int64{minute: {"answered": 3, "failed": 1}, minute - 1: {"answered": 2}}, false},
		{"empty hash", []any{int64(5)}, map[int64]map[string]int64{}, false},
		{"malformed fields are skipped", []any{int64(5), "x:answered", "3", "29000000:", "3", "29000000:failed", "many", ":a", "1", "29000000:answered", "4"},
			map[int64]map[string]int64{minute: {"answered": 4}}, false},
		{"odd trailing field", []any{int64(5), "29000000:answered", "4", "29000000:failed"}, map[int64]map[string]int64{minute: {"answered": 4}}, false},
		{"non-string values", []any{int64(5), int64(3), "1", "29000000:answered", int64(4)}, map[int64]map[string]int64{}, false},
		{"empty reply", []any{}, nil, true},
		{"time not an integer", []any{"soon", "29000000:answered", "4"}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseRecent(tc.reply)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseRecent error = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && (r.Now != 5 || fmt.Sprint(r.Minutes) != fmt.Sprint(tc.want)) {
				t.Errorf("parseRecent = %+v, want now 5 and %v", r, tc.want)
			}
		})
	}
}

func FuzzParseRecent(f *testing.F) {
	f.Add(int64(at(minute, 0)), "29000000:answered", "3")
	f.Add(int64(-1), "m", "29000000")
	f.Add(int64(0), "-5:failed", "-9223372036854775808")
	f.Fuzz(func(t *testing.T, now int64, field, value string) {
		r, err := parseRecent([]any{now, field, value})
		if err != nil {
			t.Fatal(err)
		}
		minute, hour := r.Window(1), r.Window(60)
		c, err := strconv.ParseInt(value, 10, 64)
		if err != nil || c < 0 {
			return
		}
		// One bucket of c runs: no window counts more than c, and the hour holds the minute.
		for name, n := range hour {
			if n < 0 || n > c || minute[name] > n {
				t.Errorf("one bucket of %d: last minute %v, last hour %v", c, minute, hour)
			}
		}
	})
}

// recentFields lists the recent hash's fields, sorted.
func recentFields(t *testing.T, s *Store) []string {
	t.Helper()
	f, err := s.Client().HKeys(ctx, s.recentKey()).Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(f)
	return f
}

// embeddedStore returns a store on a fresh miniredis, the embedded backend.
func embeddedStore(t *testing.T) *Store {
	t.Helper()
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return New(c, "sbtest:")
}

// TestSettleWritesRecentBuckets proves the settle and dead scripts count into the current
// minute's bucket in the same call as the totals, drop buckets that left the window at a new
// minute's first write, and that Recent reads them back, on Redis and on the embedded miniredis.
func TestSettleWritesRecentBuckets(t *testing.T) {
	t.Run("redis", func(t *testing.T) { testSettleWritesRecentBuckets(t, newStore(t)) })
	t.Run("embedded miniredis", func(t *testing.T) { testSettleWritesRecentBuckets(t, embeddedStore(t)) })
}

func testSettleWritesRecentBuckets(t *testing.T, s *Store) {
	now := at(minute-60, 10*time.Second)
	s.clock = func() int64 { return now }
	settle := func(counters map[string]int64) {
		t.Helper()
		if err := s.Counters().Settle(ctx, Settlement{Counters: counters}); err != nil {
			t.Fatal(err)
		}
	}
	settle(map[string]int64{"answered": 60, "failed": 6})
	now = at(minute-1, 0)
	settle(map[string]int64{"answered": 10})
	settle(map[string]int64{"answered": 2}) // same minute: same bucket
	if _, err := s.DeadLetters().Add(ctx, tag, DeadLetter{RunID: "r1", Reason: "x", Envelope: []byte("{}"), Conv: "k", At: time.UnixMilli(now)}, true); err != nil {
		t.Fatal(err)
	}
	now = at(minute, 30*time.Second)
	settle(map[string]int64{"answered": 3})
	// A batch of spent hints and finished runs only touches no bucket.
	if err := s.Counters().Settle(ctx, Settlement{Done: []string{Member(tag, "gone")}}); err != nil {
		t.Fatal(err)
	}

	fields := []string{
		fmt.Sprint(minute-1, ":answered"), fmt.Sprint(minute-1, ":dead_lettered"), fmt.Sprint(minute-1, ":signature_failures"),
		fmt.Sprint(minute, ":answered"), fmt.Sprint(minute-60, ":answered"), fmt.Sprint(minute-60, ":failed"), "m",
	}
	slices.Sort(fields)
	if got, want := fmt.Sprint(recentFields(t, s)), fmt.Sprint(fields); got != want {
		t.Errorf("recent fields = %s, want %s", got, want)
	}
	r, err := s.Counters().Recent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Now != now {
		t.Errorf("Recent read at %d, want the injected %d", r.Now, now)
	}
	hour, last := r.Window(60), r.Window(1)
	if !maps.Equal(hour, map[string]int64{"answered": 3 + 12 + 30, "failed": 3, "dead_lettered": 1, "signature_failures": 1}) {
		t.Errorf("hour = %v", hour)
	}
	if !maps.Equal(last, map[string]int64{"answered": 3 + 6, "dead_lettered": 1, "signature_failures": 1}) {
		t.Errorf("last minute = %v", last)
	}
	if ttl, _ := s.Client().TTL(ctx, s.recentKey()).Result(); ttl <= time.Hour || ttl > 62*time.Minute {
		t.Errorf("TTL = %s, want a bit over an hour", ttl)
	}

	// The next minute's first write drops the minute that left the hour.
	now = at(minute+1, 0)
	settle(map[string]int64{"cancelled": 1})
	for _, f := range recentFields(t, s) {
		if f == fmt.Sprint(minute-60, ":answered") || f == fmt.Sprint(minute-60, ":failed") {
			t.Errorf("field %s outlived its hour", f)
		}
	}
	// A clock stepped back drops the buckets ahead of it.
	now = at(minute-2, 0)
	settle(map[string]int64{"answered": 1})
	if got, want := fmt.Sprint(recentFields(t, s)), fmt.Sprint([]string{fmt.Sprint(minute-2, ":answered"), "m"}); got != want {
		t.Errorf("after a step back, recent fields = %s, want %s", got, want)
	}
}

// TestRecentOnRedisClock proves that without an injected clock, buckets are written and read on
// Redis's clock.
func TestRecentOnRedisClock(t *testing.T) {
	t.Run("redis", func(t *testing.T) { testRecentOnRedisClock(t, newStore(t)) })
	t.Run("embedded miniredis", func(t *testing.T) { testRecentOnRedisClock(t, embeddedStore(t)) })
}

func testRecentOnRedisClock(t *testing.T, s *Store) {
	if err := s.Counters().Settle(ctx, Settlement{Counters: map[string]int64{"answered": 2}}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Counters().Recent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(time.UnixMilli(r.Now)); d < -time.Minute || d > time.Minute {
		t.Errorf("Recent read at %s, not about now", time.UnixMilli(r.Now))
	}
	if h := r.Window(60); h["answered"] != 2 {
		t.Errorf("hour = %v, want 2 answered", h)
	}
}
