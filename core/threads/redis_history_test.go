package threads

import (
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

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
