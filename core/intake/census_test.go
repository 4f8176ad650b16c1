package intake

import (
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/poll"
)

const censusGroup = "discord:1:2"

// attends fails the test unless owner's attendance counts want owners alive.
func attends(t testing.TB, l Lease, owner string, ttl time.Duration, want int) {
	t.Helper()
	n, err := l.Attend(t.Context(), censusGroup, owner, ttl)
	if err != nil || n != want {
		t.Fatalf("%s attends: %d, %v; want %d alive", owner, n, err, want)
	}
}

// TestCensusCountsEachOwnerOnce proves attendCensus's success path: each owner is counted once
// however often it attends, in one sorted set at Pintake:members:<group>.
func TestCensusCountsEachOwnerOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l := NewLease(b.c, b.prefix)
		attends(t, l, "a", time.Minute, 1)
		attends(t, l, "b", time.Minute, 2)
		attends(t, l, "a", time.Minute, 2)
		if n := b.c.ZCard(t.Context(), b.prefix+"intake:members:"+censusGroup).Val(); n != 2 {
			t.Fatalf("the census set has %d members, want 2", n)
		}
	})
}

// TestCensusScoresOnRedisClock proves an attendance lapses ttl after Redis's TIME when it was
// made — one clock for every process, whatever theirs say.
func TestCensusScoresOnRedisClock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx, l := t.Context(), NewLease(b.c, b.prefix)
		before := b.c.Time(ctx).Val()
		attends(t, l, "a", time.Minute, 1)
		after := b.c.Time(ctx).Val()
		score := int64(b.c.ZScore(ctx, b.prefix+"intake:members:"+censusGroup, "a").Val())
		lo, hi := before.Add(time.Minute).UnixMilli()-1, after.Add(time.Minute).UnixMilli()+1
		if score < lo || score > hi {
			t.Fatalf("a's attendance lapses at %d, want between %d and %d (Redis TIME + 1 min)", score, lo, hi)
		}
	})
}

// TestCensusLeaveTakesAnOwnerOutAtOnce proves Leave: the owner is not counted at the next
// attendance, without waiting for its own to lapse; leaving twice is no error.
func TestCensusLeaveTakesAnOwnerOutAtOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l := NewLease(b.c, b.prefix)
		attends(t, l, "a", time.Minute, 1)
		attends(t, l, "b", time.Minute, 2)
		for range 2 {
			if err := l.Leave(t.Context(), censusGroup, "b"); err != nil {
				t.Fatal(err)
			}
		}
		attends(t, l, "a", time.Minute, 1)
	})
}

// TestCensusDropsAnOwnerWhoseAttendanceLapsed proves attendCensus's expiry path: an owner who
// stops attending (a process killed -9) is dropped once its time on Redis's clock passes.
func TestCensusDropsAnOwnerWhoseAttendanceLapsed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l := NewLease(b.c, b.prefix)
		attends(t, l, "a", time.Minute, 1)
		attends(t, l, "c", 30*time.Millisecond, 2)
		poll.Until(t, "c's attendance to lapse", func() bool {
			n, err := l.Attend(t.Context(), censusGroup, "a", time.Minute)
			return err == nil && n == 1
		})
	})
}

// TestCensusKeyExpiresThreeTTLsAfterTheLastAttendance proves the census set's own TTL: each
// attendance sets it to three TTLs, and a set nobody attends any more goes away.
func TestCensusKeyExpiresThreeTTLsAfterTheLastAttendance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l, key := NewLease(b.c, b.prefix), b.prefix+"intake:members:"+censusGroup
		attends(t, l, "a", time.Minute, 1)
		expiresWithin(t, b.c, key, 2*time.Minute, 3*time.Minute)
		attends(t, l, "a", 20*time.Millisecond, 1)
		expiresWithin(t, b.c, key, 0, 60*time.Millisecond)
		waitGone(t, b, key, 100*time.Millisecond)
	})
}
