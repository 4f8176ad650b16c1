package rdb

import (
	"fmt"
	"testing"
	"time"
)

func TestScriptDead(t *testing.T) {
	s := newStore(t)
	admit(t, s, "r1", 0, "")
	at := time.UnixMilli(time.Now().UnixMilli())
	d := DeadLetter{RunID: "r1", Reason: "signature: unsigned", Envelope: []byte("{}"), Conv: "k", Attempts: 1, At: at}
	id, err := s.DeadLetters().Add(ctx, tag, d, true)
	if err != nil {
		t.Fatal(err)
	}
	list, _ := s.DeadLetters().List(ctx, 10)
	d.ID = id
	if len(list) != 1 || fmt.Sprint(list[0]) != fmt.Sprint(d) {
		t.Fatalf("DeadLetters = %+v, want %+v", list, d)
	}
	if st, _ := s.Counters().Stats(ctx); st["dead_lettered"] != 1 || st["signature_failures"] != 1 {
		t.Errorf("stats = %v", st)
	}
	if p, _ := s.Admissions().Pending(ctx); p != 0 {
		t.Errorf("pending = %d, want the dead run no longer pending", p)
	}
	if got, ok, _ := s.DeadLetters().Find(ctx, "r1"); !ok || got.ID != id {
		t.Errorf("Find = %+v %v", got, ok)
	}
	if ok, _ := s.DeadLetters().Delete(ctx, id); !ok {
		t.Error("Delete found nothing")
	}
	if _, ok, _ := s.DeadLetters().Find(ctx, "r1"); ok {
		t.Error("deleted dead letter still found")
	}
}
