package threads

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// A run record is what a run of a conversation leaves when it ends: its outcome and its result
// (the caller's closing event, opaque bytes), kept for OutcomeTTL. It lives under the
// conversation's hash tag, so BeginRun reads it together with the thread and its log, and
// FinishRun writes it together with the run's turn, each in one atomic step (one script). It is
// separate from RecordOutcome's record, which callers without a conversation use.

// RunStart is how a run stands when it starts, as BeginRun read it.
type RunStart struct {
	// Finished reports that the run already ended (a redelivered run): Outcome and Result are
	// what FinishRun recorded, and Thread, Created and Events are zero (nothing else was read
	// or written).
	Finished bool
	Outcome  string
	Result   []byte
	// Thread is the conversation's thread, created by this call when Created.
	Thread  Thread
	Created bool
	// Events is the thread's session log as LoadEvents returns it.
	Events []json.RawMessage
}

// BeginRun reads, in one atomic step (one round trip), whether run runID of the conversation
// already ended; if not, it ensures the conversation's thread (as Ensure) and loads its session
// log (as LoadEvents). A stored turn that does not decode is a *CorruptError.
func (s *Store) BeginRun(ctx context.Context, convKey, runID string) (RunStart, error) {
	if err := checkConvKey(convKey); err != nil {
		return RunStart{}, fmt.Errorf("threads: begin run: %w", err)
	}
	if err := checkRunID(runID); err != nil {
		return RunStart{}, fmt.Errorf("threads: begin run: %w", err)
	}
	ck := s.keys.conv(convKey)
	now := s.opts.Now()
	b, err := s.r.beginRun(ctx, s.keys.run(convKey, runID), ck, s.ids.next(now), convKey, now, s.ids.next(now))
	if err != nil {
		return RunStart{}, fmt.Errorf("threads: begin run %s of %q: %w", runID, convKey, err)
	}
	if b.finished {
		return RunStart{Finished: true, Outcome: b.outcome, Result: []byte(b.result)}, nil
	}
	th, err := decodeThread(ck.thread, convKey, b.thread)
	if err != nil {
		return RunStart{}, fmt.Errorf("threads: begin run %s of %q: %w", runID, convKey, err)
	}
	events, err := decodeLog(ck.log, b.log)
	if err != nil {
		return RunStart{}, fmt.Errorf("threads: begin run %s of %q: %w", runID, convKey, err)
	}
	return RunStart{Thread: th, Created: b.created, Events: events}, nil
}

// decodeLog reads the stored turns of the log at key back into their events, oldest first, as
// decodeTurn does. The events share one copy of the log's bytes.
func decodeLog(key string, log []string) ([]json.RawMessage, error) {
	if len(log) == 0 {
		return nil, nil
	}
	size := 0
	for _, r := range log {
		size += len(r)
	}
	buf := make([]byte, 0, size)
	events := make([]json.RawMessage, 0, 8*len(log))
	for i, r := range log {
		buf = append(buf, r...)
		turn := buf[len(buf)-len(r):]
		var err error
		if events, err = appendTurn(events, key, i, turn); err != nil {
			return nil, err
		}
		if i == 0 {
			// The first turn's events per byte predict the rest: grow once rather than regrow.
			events = slices.Grow(events, len(events)*(size-len(turn))/len(turn))
		}
	}
	return events, nil
}

// RunEnd is how a run ended, for FinishRun.
type RunEnd struct {
	// Outcome names the end (e.g. "answered"); it must not be empty.
	Outcome string
	// Result is what BeginRun returns for the run from now on (e.g. the closing event).
	Result []byte
	// Turn, when not empty, is appended to the session log of thread ThreadID as AppendTurn
	// does (same validation, same trimming).
	ThreadID string
	Turn     []json.RawMessage
}

// FinishRun records the end of run runID of the conversation — Turn appended to the session
// log, then Result and Outcome recorded — in one atomic step (one round trip): nobody ever sees
// the outcome without the result and the turn, and a crash leaves all or nothing.
//
// first is false when the run already had an outcome: then nothing changes (no turn is appended
// twice). With a Turn: ErrThreadNotFound when the conversation has no thread (nothing is
// written); ErrStaleThread, with first true, when ThreadID is no longer current (the outcome and
// result are recorded, the turn is not). The record is kept for OutcomeTTL.
func (s *Store) FinishRun(ctx context.Context, convKey, runID string, end RunEnd) (first bool, err error) {
	if err := checkConvKey(convKey); err != nil {
		return false, fmt.Errorf("threads: finish run: %w", err)
	}
	if err := checkRunID(runID); err != nil {
		return false, fmt.Errorf("threads: finish run: %w", err)
	}
	if end.Outcome == "" {
		return false, fmt.Errorf("threads: finish run %s: %w", runID, invalid("empty outcome"))
	}
	var turn []byte
	if len(end.Turn) > 0 {
		if end.ThreadID == "" {
			return false, fmt.Errorf("threads: finish run %s: %w", runID, invalid("a turn needs its thread id"))
		}
		if turn, err = encodeTurn(end.Turn); err != nil {
			return false, fmt.Errorf("threads: finish run %s: %w", runID, err)
		}
	}
	n, err := s.r.finishRun(ctx, s.keys.run(convKey, runID), s.keys.conv(convKey), end.Outcome, end.Result, s.opts.OutcomeTTL, end.ThreadID, turn, s.opts.HistoryTurns)
	switch {
	case err != nil:
		return false, fmt.Errorf("threads: finish run %s of %q: %w", runID, convKey, err)
	case n == -3:
		return false, nil
	case n == -1:
		return false, fmt.Errorf("threads: finish run %s of %q: %w", runID, convKey, ErrThreadNotFound)
	case n == -2:
		return true, fmt.Errorf("threads: finish run %s of %q thread %s: %w", runID, convKey, end.ThreadID, ErrStaleThread)
	}
	return true, nil
}
