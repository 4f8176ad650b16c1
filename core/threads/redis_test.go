package threads

import (
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The tests of the Redis layer (rdb) drive each Lua script and pipeline directly, on every
// backend, and check its reply and the keys it leaves: this file those of redis.go, and each
// redis_<component>_test.go those of its redis_<component>.go.

func scriptKeys(t *testing.T, c redis.UniversalClient) (rdb, convKeys) {
	t.Helper()
	return newRDB(c), keyspace{prefix: uniquePrefix(t, c)}.conv("conv/script")
}

var t0 = time.UnixMilli(1764504000000)

func TestRecordOnceScript(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		r, _ := scriptKeys(t, c)
		key := uniquePrefix(t, c) + "once"
		if first, existing, err := r.recordOnce(ctx, key, []byte("a"), time.Minute); err != nil || !first || existing != nil {
			t.Errorf("first = %v, %q, %v", first, existing, err)
		}
		if first, existing, err := r.recordOnce(ctx, key, []byte("b"), time.Minute); err != nil || first || string(existing) != "a" {
			t.Errorf("second = %v, %q, %v; want the first value", first, existing, err)
		}
		if ttl, _ := c.PTTL(ctx, key).Result(); ttl <= 59*time.Second || ttl > time.Minute {
			t.Errorf("TTL = %v, want 1m", ttl)
		}
	})
}

func TestGetManyPipeline(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		r, ck := scriptKeys(t, c)
		prefix := ck.thread[:len("sbtest:")+13]
		keys := []string{ck.thread + "x", prefix + "{other}:x", ck.clar + "y"} // two slots
		c.Set(ctx, keys[0], "a", time.Minute)
		c.Set(ctx, keys[2], "c", time.Minute)
		vals, found, err := r.getMany(ctx, keys)
		if err != nil || !reflect.DeepEqual(found, []bool{true, false, true}) || string(vals[0]) != "a" || string(vals[2]) != "c" {
			t.Errorf("getMany = %q, %v, %v", vals, found, err)
		}
		c.HSet(ctx, keys[1], "f", "v")
		if _, _, err := r.getMany(ctx, keys); err == nil {
			t.Error("getMany over a hash succeeded")
		}
		if vals, found, err := r.getMany(ctx, nil); err != nil || len(vals) != 0 || len(found) != 0 {
			t.Errorf("getMany of nothing = %v, %v, %v", vals, found, err)
		}
	})
}
