package intake

import (
	"strings"
	"sync"
	"testing"
)

// TestOffsetsLoadWithNoneSavedIsZero proves a bot that never saved an offset polls from 0.
func TestOffsetsLoadWithNoneSavedIsZero(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if n, err := NewOffsets(b.c, b.prefix, "1").LoadOffset(t.Context()); n != 0 || err != nil {
			t.Fatalf("LoadOffset = %d, %v; want 0", n, err)
		}
	})
}

// TestOffsetsSaveMovesOnlyForward proves saveForward: a larger offset is saved (at
// Ptelegram:offset:<bot id>, with no TTL); a smaller or equal one is refused and leaves the
// saved one as it was.
func TestOffsetsSaveMovesOnlyForward(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		o, key := NewOffsets(b.c, b.prefix, "123456"), b.prefix+"telegram:offset:123456"
		for _, step := range []struct{ save, want int64 }{{5, 5}, {3, 5}, {5, 5}, {9, 9}, {0, 9}} {
			if err := o.SaveOffset(t.Context(), step.save); err != nil {
				t.Fatal(err)
			}
			if n, err := o.LoadOffset(t.Context()); n != step.want || err != nil {
				t.Fatalf("after saving %d: LoadOffset = %d, %v; want %d", step.save, n, err, step.want)
			}
		}
		if v := b.c.Get(t.Context(), key).Val(); v != "9" {
			t.Fatalf("%s holds %q, want 9", key, v)
		}
		if n := pttl(t, b.c, key); n != -1 {
			t.Fatalf("the offset expires (PTTL %d), want no TTL", n)
		}
	})
}

// TestOffsetsConcurrentSavesKeepTheLargest proves the compare and set is one step: processes
// saving at once leave the largest offset, whatever the order their saves arrive in.
func TestOffsetsConcurrentSavesKeepTheLargest(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		o := NewOffsets(b.c, b.prefix, "1")
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				if err := o.SaveOffset(t.Context(), int64(100-i)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n, err := o.LoadOffset(t.Context()); n != 100 || err != nil {
			t.Fatalf("LoadOffset = %d, %v; want 100", n, err)
		}
	})
}

// TestOffsetsLoadRefusesANonNumber proves a stored value that is not an offset is an error that
// quotes it, not a silent 0 that would replay every update Telegram still has.
func TestOffsetsLoadRefusesANonNumber(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		b.c.Set(t.Context(), b.prefix+"telegram:offset:1", "abc", 0)
		if _, err := NewOffsets(b.c, b.prefix, "1").LoadOffset(t.Context()); err == nil || !strings.Contains(err.Error(), `"abc" is not a number`) {
			t.Fatalf("err = %v, want one quoting the stored value", err)
		}
	})
}
