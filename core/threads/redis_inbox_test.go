package threads

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestIntakePipeline(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		r, ck := scriptKeys(t, c)
		ks := keyspace{prefix: ck.thread[:len("sbtest:")+13]} // the test's prefix
		allow, deny := ks.access("p")
		c.SAdd(ctx, allow, "u")
		c.HSet(ctx, ck.clar, "id", "q")
		c.Set(ctx, ks.mark("m"), "v", time.Minute)
		ops := intakeOps{claimKey: ks.claim("e"), claimTTL: time.Minute, allowKey: allow, denyKey: deny, member: "u",
			clarKey: ck.clar, markedKey: ks.mark("m"), marks: []markOp{{key: ks.mark("w"), value: []byte("x"), ttl: time.Minute}}}
		rep, err := r.intake(ctx, ops)
		if err != nil || !rep.claimed || !rep.allowed || rep.denied || rep.clar["id"] != "q" || !rep.isMarked || string(rep.marked) != "v" {
			t.Fatalf("intake = %+v, %v", rep, err)
		}
		if v, _ := c.Get(ctx, ks.mark("w")).Result(); v != "x" {
			t.Errorf("written mark = %q", v)
		}
		if ttl, _ := c.PTTL(ctx, ks.claim("e")).Result(); ttl <= 0 || ttl > time.Minute {
			t.Errorf("claim TTL = %v", ttl)
		}
		ops.markedKey = ks.mark("missing")
		rep, err = r.intake(ctx, ops)
		if err != nil || rep.claimed || rep.isMarked {
			t.Errorf("second intake = %+v, %v; want not claimed, not marked", rep, err)
		}
	})
}

func TestReleaseClaimScript(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		r, _ := scriptKeys(t, c)
		key := uniquePrefix(t, c) + "claim"
		if err := r.releaseClaim(ctx, key, "p:a"); err != nil {
			t.Errorf("release of no claim = %v", err)
		}
		for _, held := range []string{"p:b", claimDone} {
			c.Set(ctx, key, held, time.Minute)
			if err := r.releaseClaim(ctx, key, "p:a"); err != nil {
				t.Errorf("release of %q under p:a = %v", held, err)
			}
			if v, _ := c.Get(ctx, key).Result(); v != held {
				t.Errorf("claim held %q after another's release = %q, want it left alone", held, v)
			}
		}
		c.Set(ctx, key, "p:a", time.Minute)
		if err := r.releaseClaim(ctx, key, "p:a"); err != nil {
			t.Errorf("release = %v", err)
		}
		if n, _ := c.Exists(ctx, key).Result(); n != 0 {
			t.Error("the caller's pending claim survived its release")
		}
	})
}

func TestCompleteClaimScript(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		r, _ := scriptKeys(t, c)
		key := uniquePrefix(t, c) + "claim"
		c.Set(ctx, key, "p:b", time.Minute)
		if err := r.completeClaim(ctx, key, "p:a", time.Hour); err != nil {
			t.Errorf("complete under another token = %v", err)
		}
		if v, _ := c.Get(ctx, key).Result(); v != "p:b" {
			t.Errorf("another's pending claim after complete = %q, want it left alone", v)
		}
		c.Set(ctx, key, "p:a", time.Minute)
		if err := r.completeClaim(ctx, key, "p:a", time.Hour); err != nil {
			t.Errorf("complete = %v", err)
		}
		if v, _ := c.Get(ctx, key).Result(); v != claimDone {
			t.Errorf("completed claim = %q, want %q", v, claimDone)
		}
		if ttl, _ := c.PTTL(ctx, key).Result(); ttl <= 59*time.Minute || ttl > time.Hour {
			t.Errorf("completed claim TTL = %v, want 1h", ttl)
		}
		c.Del(ctx, key)
		if err := r.completeClaim(ctx, key, "p:a", time.Hour); err != nil {
			t.Errorf("complete of an expired claim = %v", err)
		}
		if v, _ := c.Get(ctx, key).Result(); v != claimDone {
			t.Errorf("claim completed after it expired = %q, want %q: a redelivery is a duplicate", v, claimDone)
		}
	})
}
