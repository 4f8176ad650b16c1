package intake

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// holds fails the test unless a lease call answered want without error.
func holds(t testing.TB, what string, got bool, err error, want bool) {
	t.Helper()
	if err != nil || got != want {
		t.Fatalf("%s: %v, %v; want %v", what, got, err, want)
	}
}

// holder is who holds the lease stored at key, "" when nobody does.
func holder(t testing.TB, b backend, key string) string {
	t.Helper()
	v, err := b.c.Get(t.Context(), key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	return v
}

// TestLeaseAcquireTakesAFreeLeaseForItsTTL proves acquireLease's success path: a free lease goes
// to whoever asks, stored at Pintake:<name> as its owner's id, expiring after the TTL asked.
func TestLeaseAcquireTakesAFreeLeaseForItsTTL(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l, key := NewLease(b.c, b.prefix), b.prefix+"intake:telegram:1"
		ok, err := l.TryAcquire(t.Context(), "telegram:1", "a", 10*time.Second)
		holds(t, "a takes the free lease", ok, err, true)
		if h := holder(t, b, key); h != "a" {
			t.Fatalf("the lease key holds %q, want a", h)
		}
		expiresWithin(t, b.c, key, 9*time.Second, 10*time.Second)
	})
}

// TestLeaseAcquireByItsOwnerExtendsIt proves acquireLease's second branch: the owner asking again
// keeps the lease and its expiry moves to the new TTL.
func TestLeaseAcquireByItsOwnerExtendsIt(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l, key := NewLease(b.c, b.prefix), b.prefix+"intake:telegram:1"
		ok, err := l.TryAcquire(t.Context(), "telegram:1", "a", 10*time.Second)
		holds(t, "a takes it", ok, err, true)
		ok, err = l.TryAcquire(t.Context(), "telegram:1", "a", time.Minute)
		holds(t, "a takes it again", ok, err, true)
		expiresWithin(t, b.c, key, 50*time.Second, time.Minute)
	})
}

// TestLeaseAcquireRefusesAnotherOwner proves acquireLease's refusal: while a holds the lease,
// b's attempt fails and changes neither the holder nor the expiry.
func TestLeaseAcquireRefusesAnotherOwner(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l, key := NewLease(b.c, b.prefix), b.prefix+"intake:telegram:1"
		ok, err := l.TryAcquire(t.Context(), "telegram:1", "a", 10*time.Second)
		holds(t, "a takes it", ok, err, true)
		ok, err = l.TryAcquire(t.Context(), "telegram:1", "b", time.Minute)
		holds(t, "b tries", ok, err, false)
		if h := holder(t, b, key); h != "a" {
			t.Fatalf("after b's attempt the lease is held by %q, want a", h)
		}
		expiresWithin(t, b.c, key, 0, 10*time.Second)
	})
}

// TestLeaseLapsedGoesToWhoeverAsks proves the lease's TTL: a lease its owner stopped renewing
// expires, and the next owner to ask takes it.
func TestLeaseLapsedGoesToWhoeverAsks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l, key := NewLease(b.c, b.prefix), b.prefix+"intake:telegram:1"
		ok, err := l.TryAcquire(t.Context(), "telegram:1", "a", 50*time.Millisecond)
		holds(t, "a takes it for 50 ms", ok, err, true)
		waitGone(t, b, key, 100*time.Millisecond)
		ok, err = l.TryAcquire(t.Context(), "telegram:1", "b", time.Minute)
		holds(t, "b takes the lapsed lease", ok, err, true)
		if h := holder(t, b, key); h != "b" {
			t.Fatalf("the lease is held by %q, want b", h)
		}
	})
}

// TestLeaseRenewExtendsOnlyTheOwners proves renewLease: the owner's renewal moves the expiry to
// the new TTL; another owner's is refused and changes nothing.
func TestLeaseRenewExtendsOnlyTheOwners(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l, key := NewLease(b.c, b.prefix), b.prefix+"intake:discord:1:0/2"
		ok, err := l.TryAcquire(t.Context(), "discord:1:0/2", "a", 10*time.Second)
		holds(t, "a takes it", ok, err, true)
		ok, err = l.Renew(t.Context(), "discord:1:0/2", "b", time.Minute)
		holds(t, "b renews", ok, err, false)
		if h := holder(t, b, key); h != "a" {
			t.Fatalf("after b's renewal the lease is held by %q, want a", h)
		}
		expiresWithin(t, b.c, key, 0, 10*time.Second)
		ok, err = l.Renew(t.Context(), "discord:1:0/2", "a", time.Minute)
		holds(t, "a renews", ok, err, true)
		expiresWithin(t, b.c, key, 50*time.Second, time.Minute)
	})
}

// TestLeaseRenewOfALapsedLeaseFails proves renewLease's stale path: once a's lease expired, a's
// renewal fails and does not bring the key back — a must acquire it like anyone else.
func TestLeaseRenewOfALapsedLeaseFails(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l, key := NewLease(b.c, b.prefix), b.prefix+"intake:telegram:1"
		ok, err := l.TryAcquire(t.Context(), "telegram:1", "a", 50*time.Millisecond)
		holds(t, "a takes it for 50 ms", ok, err, true)
		waitGone(t, b, key, 100*time.Millisecond)
		ok, err = l.Renew(t.Context(), "telegram:1", "a", time.Minute)
		holds(t, "a renews the lapsed lease", ok, err, false)
		if n := pttl(t, b.c, key); n != -2 {
			t.Fatalf("a failed renewal left the key behind (PTTL %d)", n)
		}
	})
}

// TestLeaseReleaseIsTheOwnersOnly proves releaseLease: another owner's release leaves the lease
// as it was; the owner's deletes it, so the next owner takes it at once; releasing a lease
// nobody holds is no error.
func TestLeaseReleaseIsTheOwnersOnly(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l, key := NewLease(b.c, b.prefix), b.prefix+"intake:slack:A1:slot0"
		ok, err := l.TryAcquire(t.Context(), "slack:A1:slot0", "a", 10*time.Second)
		holds(t, "a takes it", ok, err, true)
		if err := l.Release(t.Context(), "slack:A1:slot0", "b"); err != nil {
			t.Fatal(err)
		}
		if h := holder(t, b, key); h != "a" {
			t.Fatalf("after b's release the lease is held by %q, want a", h)
		}
		expiresWithin(t, b.c, key, 0, 10*time.Second)
		if err := l.Release(t.Context(), "slack:A1:slot0", "a"); err != nil {
			t.Fatal(err)
		}
		if n := pttl(t, b.c, key); n != -2 {
			t.Fatalf("the key outlived its holder's release (PTTL %d)", n)
		}
		ok, err = l.TryAcquire(t.Context(), "slack:A1:slot0", "c", time.Minute)
		holds(t, "c takes the released lease", ok, err, true)
		if err := l.Release(t.Context(), "slack:A1:slot1", "a"); err != nil {
			t.Fatalf("releasing a lease nobody holds: %v", err)
		}
	})
}

// TestLeaseErrorsNameTheIntake proves a failed command's error says which lease or census and
// which step, and wraps the cause.
func TestLeaseErrorsNameTheIntake(t *testing.T) {
	l := NewLease(closedClient(t), "sbtest:closed:")
	ctx := t.Context()
	_, acquire := l.TryAcquire(ctx, "telegram:1", "a", time.Second)
	_, renew := l.Renew(ctx, "telegram:1", "a", time.Second)
	_, attend := l.Attend(ctx, "slack:A1", "a", time.Second)
	for _, c := range []struct {
		err  error
		want string
	}{
		{acquire, "intake lease telegram:1: acquire"},
		{renew, "intake lease telegram:1: renew"},
		{l.Release(ctx, "telegram:1", "a"), "intake lease telegram:1: release"},
		{attend, "intake census slack:A1: attend"},
		{l.Leave(ctx, "slack:A1", "a"), "intake census slack:A1: leave"},
	} {
		if c.err == nil || !strings.HasPrefix(c.err.Error(), c.want) || !errors.Is(c.err, redis.ErrClosed) {
			t.Errorf("err = %v, want %q wrapping redis.ErrClosed", c.err, c.want)
		}
	}
}
