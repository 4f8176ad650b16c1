package kit

import (
	"context"
	"testing"
	"time"
)

// TestClockFuncsFollowTheFields proves what Funcs hands out reads the clock at each call: a
// test that replaces Now or Sleep after the components were made is followed by them.
func TestClockFuncsFollowTheFields(t *testing.T) {
	c := NewClock()
	now, sleep := c.Funcs()
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	var slept []time.Duration
	c.Now = func() time.Time { return at }
	c.Sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	if got := now(); !got.Equal(at) {
		t.Errorf("now() = %v, want the replaced clock's %v", got, at)
	}
	if err := sleep(context.Background(), time.Hour); err != nil || len(slept) != 1 || slept[0] != time.Hour {
		t.Errorf("sleep(1h) = %v, recorded %v; want the replaced Sleep to record 1h", err, slept)
	}
}
