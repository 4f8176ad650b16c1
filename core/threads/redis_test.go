package threads

import (
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The tests in this file drive each Lua script of redis.go directly, on both backends, and
// check its reply and the keys it leaves.

func scriptKeys(t *testing.T, c redis.UniversalClient) (rdb, convKeys) {
	t.Helper()
	return newRDB(c), keyspace{prefix: uniquePrefix(t, c)}.conv("conv/script")
}

var t0 = time.UnixMilli(1764504000000)

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

func TestAppendTurnScript(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		r, ck := scriptKeys(t, c)
		if n, err := r.appendTurn(ctx, ck, "t1", []byte("[1]"), 2); err != nil || n != -1 {
			t.Errorf("append without thread = %d, %v; want -1", n, err)
		}
		c.HSet(ctx, ck.thread, "id", "t1")
		if n, err := r.appendTurn(ctx, ck, "t0", []byte("[1]"), 2); err != nil || n != -2 {
			t.Errorf("append to a stale thread = %d, %v; want -2", n, err)
		}
		for i, want := range []int64{1, 2, 2, 2} {
			n, err := r.appendTurn(ctx, ck, "t1", []byte{'[', byte('1' + i), ']'}, 2)
			if err != nil || n != want {
				t.Errorf("append %d = %d, %v; want %d", i, n, err, want)
			}
		}
		if got, err := r.loadTurns(ctx, ck.log); err != nil || !reflect.DeepEqual(got, []string{"[3]", "[4]"}) {
			t.Errorf("log = %q, %v; want the newest two turns", got, err)
		}
	})
}

func TestPutClarificationScript(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		r, ck := scriptKeys(t, c)
		written, replaced, err := r.putClarification(ctx, ck.clar, "q1", "u1", t0, []byte(`{}`), time.Hour)
		if err != nil || !written || replaced != "" {
			t.Fatalf("first put = %v, %q, %v", written, replaced, err)
		}
		want := map[string]string{"id": "q1", "state": "pending", "user": "u1", "exp": "1764504000000", "data": "{}"}
		if got, _ := c.HGetAll(ctx, ck.clar).Result(); !reflect.DeepEqual(got, want) {
			t.Errorf("record = %v, want %v", got, want)
		}
		if ttl, _ := c.PTTL(ctx, ck.clar).Result(); ttl <= 59*time.Minute || ttl > time.Hour {
			t.Errorf("record TTL = %v, want 1h", ttl)
		}
		c.HSet(ctx, ck.clar, "state", "answered")
		if written, _, err := r.putClarification(ctx, ck.clar, "q1", "u1", t0, []byte(`{}`), time.Hour); err != nil || written {
			t.Errorf("same id again = written %v, %v; want untouched", written, err)
		}
		if st, _ := c.HGet(ctx, ck.clar, "state").Result(); st != "answered" {
			t.Errorf("state after re-put = %q, want answered", st)
		}
		c.HSet(ctx, ck.clar, "state", "pending")
		written, replaced, err = r.putClarification(ctx, ck.clar, "q2", "u2", t0, []byte(`{"n":2}`), time.Hour)
		if err != nil || !written || replaced != "q1" {
			t.Errorf("put over a pending one = %v, %q, %v; want it replaced", written, replaced, err)
		}
		if got, _ := c.HGetAll(ctx, ck.clar).Result(); got["id"] != "q2" || got["user"] != "u2" || len(got) != 5 {
			t.Errorf("record after replacing = %v", got)
		}
	})
}

func TestTakeClarificationScript(t *testing.T) {
	exp := t0.Add(time.Minute)
	for _, tc := range []struct {
		name   string
		record map[string]any // nil: no record
		id     string
		user   string
		now    time.Time
		want   string
		state  string // the state left behind
		mode   string
	}{
		{"no record", nil, "q1", "u1", t0, "notfound", "", ""},
		{"other id", map[string]any{"id": "q2", "state": "pending"}, "q1", "u1", t0, "replaced", "pending", ""},
		{"answered", map[string]any{"id": "q1", "state": "answered"}, "q1", "u1", t0, "answered", "answered", ""},
		{"cancelled", map[string]any{"id": "q1", "state": "cancelled"}, "q1", "u1", t0, "cancelled", "cancelled", ""},
		{"unknown state", map[string]any{"id": "q1", "state": "??"}, "q1", "u1", t0, "corrupt", "??", ""},
		{"unreadable expiry", map[string]any{"id": "q1", "state": "pending", "exp": "x", "user": "u1"}, "q1", "u1", t0, "corrupt", "pending", ""},
		{"at expiry", map[string]any{"id": "q1", "state": "pending", "exp": ms(exp), "user": "u1"}, "q1", "u1", exp, "expired", "pending", ""},
		{"foreign", map[string]any{"id": "q1", "state": "pending", "exp": ms(exp), "user": "u1"}, "q1", "u2", t0, "foreign", "pending", ""},
		{"claimed", map[string]any{"id": "q1", "state": "pending", "exp": ms(exp), "user": "u1"}, "q1", "u1", exp.Add(-time.Millisecond), "ok", "answered", ""},
		{"anyone may answer", map[string]any{"id": "q1", "state": "pending", "exp": ms(exp), "user": "*"}, "q1", "u2", t0, "ok", "answered", ""},
		{"expire: still open", map[string]any{"id": "q1", "state": "pending", "exp": ms(exp), "user": "u1"}, "q1", "", exp.Add(-time.Millisecond), "open", "pending", "expire"},
		{"expire: taken for nobody", map[string]any{"id": "q1", "state": "pending", "exp": ms(exp), "user": "u1"}, "q1", "", exp, "ok", "answered", "expire"},
		{"expire: answered first", map[string]any{"id": "q1", "state": "answered"}, "q1", "", exp, "answered", "answered", "expire"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
				ctx := ctxT(t)
				r, ck := scriptKeys(t, c)
				if tc.record != nil {
					c.HSet(ctx, ck.clar, tc.record)
				}
				status, fields, err := r.takeClarification(ctx, ck.clar, tc.id, tc.user, tc.now, tc.mode)
				if err != nil || status != tc.want {
					t.Fatalf("take = %q, %v; want %q", status, err, tc.want)
				}
				if st, _ := c.HGet(ctx, ck.clar, "state").Result(); st != tc.state {
					t.Errorf("state left = %q, want %q", st, tc.state)
				}
				if status == "ok" && (fields["answered_by"] != tc.user || fields["answered_at"] != ms(tc.now)) {
					t.Errorf("claimed record = %v; want who and when", fields)
				}
			})
		})
	}
}

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

func TestBeginRunScript(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		r, ck := scriptKeys(t, c)
		runKey := ck.thread[:len(ck.thread)-len("thread")] + "run:r1"
		c.RPush(ctx, ck.log, "[1]", "[2]")
		b, err := r.beginRun(ctx, runKey, ck, "id1", "conv/script", t0, "s1", LogMark{})
		want := map[string]string{"id": "id1", "conv": "conv/script", "created": "1764504000000", "session": "s1"}
		if err != nil || b.finished || !b.created || !reflect.DeepEqual(b.thread, want) || !reflect.DeepEqual(b.log, []string{"[1]", "[2]"}) {
			t.Fatalf("first begin = %+v, %v", b, err)
		}
		b, err = r.beginRun(ctx, runKey, ck, "id2", "conv/script", t0, "s2", LogMark{})
		if err != nil || b.created || b.thread["id"] != "id1" {
			t.Errorf("second begin = %+v, %v; want the first thread", b, err)
		}
		c.HSet(ctx, runKey, "outcome", "answered", "result", "R")
		c.Del(ctx, ck.thread)
		b, err = r.beginRun(ctx, runKey, ck, "id3", "conv/script", t0, "s3", LogMark{})
		if err != nil || !b.finished || b.outcome != "answered" || b.result != "R" {
			t.Errorf("begin of a finished run = %+v, %v", b, err)
		}
		if n, _ := c.Exists(ctx, ck.thread).Result(); n != 0 {
			t.Error("begin of a finished run created a thread")
		}
	})
}

func TestFinishRunScript(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		r, ck := scriptKeys(t, c)
		base := ck.thread[:len(ck.thread)-len("thread")]
		steps := []struct {
			name   string
			run    string
			thread string
			turn   string
			want   int64
		}{
			{"turn without thread", "r0", "t1", "[0]", -1},
			{"no turn, no thread", "r1", "", "", 0},
			{"already finished", "r1", "", "", -3},
			{"turn on the current thread", "r2", "t1", "[1]", 1},
			{"turn on a stale thread", "r3", "t0", "[2]", -2},
			{"trimmed", "r4", "t1", "[3]", 2},
			{"trimmed again", "r5", "t1", "[4]", 2},
		}
		for _, st := range steps {
			if st.name == "turn on the current thread" {
				c.HSet(ctx, ck.thread, "id", "t1")
			}
			n, err := r.finishRun(ctx, base+"run:"+st.run, ck, "answered", []byte("res-"+st.run), time.Hour, st.thread, []byte(st.turn), 2)
			if err != nil || n != st.want {
				t.Errorf("%s = %d, %v; want %d", st.name, n, err, st.want)
			}
		}
		if got, _ := r.loadTurns(ctx, ck.log); !reflect.DeepEqual(got, []string{"[3]", "[4]"}) {
			t.Errorf("log = %q; want the newest two turns", got)
		}
		if n, _ := c.Exists(ctx, base+"run:r0").Result(); n != 0 {
			t.Error("a refused finish recorded the run")
		}
		if got, _ := c.HGetAll(ctx, base+"run:r3").Result(); !reflect.DeepEqual(got, map[string]string{"outcome": "answered", "result": "res-r3"}) {
			t.Errorf("stale finish record = %v", got)
		}
		if ttl, _ := c.PTTL(ctx, base+"run:r2").Result(); ttl <= 59*time.Minute || ttl > time.Hour {
			t.Errorf("record TTL = %v, want 1h", ttl)
		}
	})
}

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
