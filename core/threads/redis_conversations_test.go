package threads

import (
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestEnsureScript(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		r, ck := scriptKeys(t, c)
		created, fields, err := r.ensureThread(ctx, ck.thread, "id1", "conv/script", t0, "s1")
		want := map[string]string{"id": "id1", "conv": "conv/script", "created": "1764504000000", "session": "s1"}
		if err != nil || !created || !reflect.DeepEqual(fields, want) {
			t.Fatalf("first ensure = %v, %v, %v; want created %v", created, fields, err, want)
		}
		created, fields, err = r.ensureThread(ctx, ck.thread, "id2", "conv/script", t0.Add(time.Second), "s2")
		if err != nil || created || !reflect.DeepEqual(fields, want) {
			t.Errorf("second ensure = %v, %v, %v; want not created and the first record", created, fields, err)
		}
	})
}

func TestResetScript(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		r, ck := scriptKeys(t, c)
		c.HSet(ctx, ck.thread, "id", "old", "conv", "conv/script", "created", "1", "session", "s0", "settings", `{"model":"m"}`)
		c.RPush(ctx, ck.log, "[1]", "[2]")
		c.HSet(ctx, ck.clar, "id", "q1", "state", "pending")

		old, cancelled, fields, err := r.resetThread(ctx, ck, "new", "conv/script", t0, "s1")
		want := map[string]string{"id": "new", "conv": "conv/script", "created": "1764504000000", "session": "s1", "settings": `{"model":"m"}`}
		if err != nil || old != "old" || cancelled != "q1" || !reflect.DeepEqual(fields, want) {
			t.Fatalf("reset = %q, %q, %v, %v; want old, q1, %v", old, cancelled, fields, err, want)
		}
		if n, _ := c.Exists(ctx, ck.log).Result(); n != 0 {
			t.Errorf("the log survived the reset")
		}
		if st, _ := c.HGet(ctx, ck.clar, "state").Result(); st != "cancelled" {
			t.Errorf("clarification state after reset = %q, want cancelled", st)
		}

		// An answered clarification stays answered; a missing thread is simply created.
		c.Del(ctx, ck.thread)
		c.HSet(ctx, ck.clar, "state", "answered")
		old, cancelled, fields, err = r.resetThread(ctx, ck, "newer", "conv/script", t0, "s2")
		if err != nil || old != "" || cancelled != "" || fields["id"] != "newer" || fields["settings"] != "" {
			t.Errorf("reset without thread = %q, %q, %v, %v", old, cancelled, fields, err)
		}
		if st, _ := c.HGet(ctx, ck.clar, "state").Result(); st != "answered" {
			t.Errorf("answered clarification after reset = %q, want answered", st)
		}
	})
}

func TestSetSettingsScript(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		r, ck := scriptKeys(t, c)
		if ok, err := r.setSettings(ctx, ck.thread, []byte(`{}`)); err != nil || ok {
			t.Errorf("settings without a thread = %v, %v; want not stored", ok, err)
		}
		if n, _ := c.Exists(ctx, ck.thread).Result(); n != 0 {
			t.Errorf("setSettings created a thread record without an id")
		}
		c.HSet(ctx, ck.thread, "id", "x")
		if ok, err := r.setSettings(ctx, ck.thread, []byte(`{"model":"m"}`)); err != nil || !ok {
			t.Errorf("settings on a thread = %v, %v; want stored", ok, err)
		}
		if s, _ := c.HGet(ctx, ck.thread, "settings").Result(); s != `{"model":"m"}` {
			t.Errorf("stored settings = %q", s)
		}
	})
}

func TestForgetScript(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		r, ck := scriptKeys(t, c)
		if had, cancelled, err := r.forget(ctx, ck); err != nil || had || cancelled != "" {
			t.Errorf("forget of nothing = %v, %q, %v", had, cancelled, err)
		}
		c.HSet(ctx, ck.thread, "id", "t1", "conv", "conv/script")
		c.RPush(ctx, ck.log, "[1]")
		c.HSet(ctx, ck.clar, "id", "q1", "state", "pending")
		had, cancelled, err := r.forget(ctx, ck)
		if err != nil || !had || cancelled != "q1" {
			t.Fatalf("forget = %v, %q, %v; want the thread dropped and q1 cancelled", had, cancelled, err)
		}
		if n, _ := c.Exists(ctx, ck.thread, ck.log).Result(); n != 0 {
			t.Errorf("%d of the thread record and log survived", n)
		}
		if got, _ := c.HGetAll(ctx, ck.clar).Result(); !reflect.DeepEqual(got, map[string]string{"id": "q1", "state": "cancelled"}) {
			t.Errorf("clarification after forget = %v, want kept, cancelled", got)
		}

		// An answered clarification is left as it is.
		c.HSet(ctx, ck.thread, "id", "t2")
		c.HSet(ctx, ck.clar, "state", "answered")
		if had, cancelled, err := r.forget(ctx, ck); err != nil || !had || cancelled != "" {
			t.Errorf("forget with an answered clarification = %v, %q, %v", had, cancelled, err)
		}
		if st, _ := c.HGet(ctx, ck.clar, "state").Result(); st != "answered" {
			t.Errorf("answered clarification after forget = %q, want answered", st)
		}
	})
}
