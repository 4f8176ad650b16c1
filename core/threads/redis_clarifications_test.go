package threads

import (
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

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

func TestWithdrawClarificationScript(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		r, ck := scriptKeys(t, c)
		if fields, err := r.withdrawClarification(ctx, ck.clar); err != nil || fields != nil {
			t.Errorf("withdraw without a record = %v, %v; want nothing", fields, err)
		}
		c.HSet(ctx, ck.clar, "id", "q1", "state", "pending", "user", "u1")
		fields, err := r.withdrawClarification(ctx, ck.clar)
		want := map[string]string{"id": "q1", "state": "pending", "user": "u1"}
		if err != nil || !reflect.DeepEqual(fields, want) {
			t.Fatalf("withdraw = %v, %v; want the record as it was, %v", fields, err, want)
		}
		if st, _ := c.HGet(ctx, ck.clar, "state").Result(); st != "cancelled" {
			t.Errorf("state after withdraw = %q, want cancelled", st)
		}
		if fields, err := r.withdrawClarification(ctx, ck.clar); err != nil || fields != nil {
			t.Errorf("second withdraw = %v, %v; want nothing (none pending)", fields, err)
		}
		c.HSet(ctx, ck.clar, "state", "answered")
		if fields, err := r.withdrawClarification(ctx, ck.clar); err != nil || fields != nil {
			t.Errorf("withdraw of an answered one = %v, %v; want nothing", fields, err)
		}
		if st, _ := c.HGet(ctx, ck.clar, "state").Result(); st != "answered" {
			t.Errorf("answered clarification after withdraw = %q, want answered", st)
		}
	})
}
