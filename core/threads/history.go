package threads

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// History is the conversations' session logs — what each thread said, turn by turn, so a
// restart continues the conversation — and the run records that keep a replayed run from
// adding its turn twice. Its Redis scripts are in redis_history.go.
type History struct{ *shared }

// AppendTurn appends one completed turn — all the session events it produced, in order — to the
// session log of thread threadID of the conversation.
//
// How the log is bounded: it is a Redis list holding one element per turn (the turn's events as
// one JSON array). In the same atomic step as the append, if the list then holds more than
// HistoryTurns turns, the oldest turns are removed until HistoryTurns remain. So trimming always
// removes whole turns, oldest first, never part of a turn, and a reader never sees a half-written
// or half-trimmed turn. The caller decides what a turn is by what it passes in one call (for the
// lead agent: the user message, tool calls and results, and the final answer).
//
// The append happens only if threadID is still the conversation's current thread: after a
// Reset it returns ErrStaleThread and stores nothing, and with no thread ErrThreadNotFound.
// Every event must be valid JSON and a turn needs at least one event (ErrInvalidArgument).
// Appends to different conversations touch different keys and never interfere; appends to one
// conversation are serialised by Redis.
func (h *History) AppendTurn(ctx context.Context, convKey, threadID string, events []json.RawMessage) error {
	if err := checkConvKey(convKey); err != nil {
		return fmt.Errorf("threads: append turn: %w", err)
	}
	turn, err := encodeTurn(events)
	if err != nil {
		return fmt.Errorf("threads: append turn to %q: %w", convKey, err)
	}
	n, err := h.r.appendTurn(ctx, h.keys.conv(convKey), threadID, turn, h.opts.HistoryTurns)
	switch {
	case err != nil:
		return fmt.Errorf("threads: append turn to %q: %w", convKey, err)
	case n == -1:
		return fmt.Errorf("threads: append turn to %q: %w", convKey, ErrThreadNotFound)
	case n == -2:
		return fmt.Errorf("threads: append turn to %q thread %s: %w", convKey, threadID, ErrStaleThread)
	}
	return nil
}

// LoadTurns returns the session log of the conversation's current thread, oldest turn first,
// each event with the bytes it was appended with (surrounding whitespace dropped). A
// conversation without a thread or without turns has an empty log (nil, nil). A stored turn that
// does not decode is a *CorruptError (ErrCorrupt).
func (h *History) LoadTurns(ctx context.Context, convKey string) ([][]json.RawMessage, error) {
	var turns [][]json.RawMessage
	err := h.eachTurn(ctx, "load turns", convKey, func(n int, events []json.RawMessage) {
		if turns == nil {
			turns = make([][]json.RawMessage, 0, n)
		}
		turns = append(turns, events)
	})
	return turns, err
}

// LoadEvents returns the session log of the conversation's current thread as one flat list of
// events, oldest first: the turns of LoadTurns, concatenated. It is what a restarted process
// replays to continue the conversation.
func (h *History) LoadEvents(ctx context.Context, convKey string) ([]json.RawMessage, error) {
	var events []json.RawMessage
	err := h.eachTurn(ctx, "load events", convKey, func(n int, turn []json.RawMessage) {
		if events == nil {
			// A guess of the size from the first turn saves most regrowth.
			events = make([]json.RawMessage, 0, n*len(turn))
		}
		events = append(events, turn...)
	})
	if err != nil {
		return nil, err
	}
	return events, nil
}

// eachTurn reads the log in one command and calls fn with each decoded turn, oldest first, and
// the number of turns.
func (h *History) eachTurn(ctx context.Context, op, convKey string, fn func(n int, events []json.RawMessage)) error {
	if err := checkConvKey(convKey); err != nil {
		return fmt.Errorf("threads: %s: %w", op, err)
	}
	key := h.keys.conv(convKey).log
	raw, err := h.r.loadTurns(ctx, key)
	if err != nil {
		return fmt.Errorf("threads: %s of %q: %w", op, convKey, err)
	}
	for i, r := range raw {
		events, err := decodeTurn(key, i, []byte(r))
		if err != nil {
			return fmt.Errorf("threads: %s of %q: %w", op, convKey, err)
		}
		fn(len(raw), events)
	}
	return nil
}

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
	// Events is the thread's session log as LoadEvents returns it — with BeginRunAfter, only
	// its turns after the caller's mark when Kept is above 0.
	Events []json.RawMessage
	// TurnSizes is how many of Events each turn holds, oldest first.
	TurnSizes []int
	// Kept, when above 0, is how many of the mark's turns (its newest) the log still holds
	// before Events: the history is those turns followed by Events. The mark's older turns were
	// trimmed. 0: Events is the whole log.
	Kept int
	// Mark is the log as read, for the next BeginRunAfter of the conversation.
	Mark LogMark
}

// LogMark names the session log as a caller holds it: thread ThreadID's log up to its
// Count-th turn, Newest that turn as stored. BeginRunAfter then reads only the turns after it.
// A thread counts its turns from its first append, so a mark never matches another thread, nor
// a log written meanwhile by someone who did not count (the turn at the mark's place differs).
type LogMark struct {
	ThreadID string
	Count    int64
	Newest   string
}

// BeginRun reads, in one atomic step (one round trip), whether run runID of the conversation
// already ended; if not, it ensures the conversation's thread (as Ensure) and loads its session
// log (as LoadEvents). A stored turn that does not decode is a *CorruptError.
func (h *History) BeginRun(ctx context.Context, convKey, runID string) (RunStart, error) {
	return h.BeginRunAfter(ctx, convKey, runID, LogMark{})
}

// BeginRunAfter is BeginRun for a caller that holds the log up to mark (a RunStart.Mark of an
// earlier call): when the mark still matches, only the turns after it are read (Kept says how
// many of the mark's the log still holds); otherwise, and for a zero mark, the whole log.
func (h *History) BeginRunAfter(ctx context.Context, convKey, runID string, mark LogMark) (RunStart, error) {
	if err := checkConvKey(convKey); err != nil {
		return RunStart{}, fmt.Errorf("threads: begin run: %w", err)
	}
	if err := checkRunID(runID); err != nil {
		return RunStart{}, fmt.Errorf("threads: begin run: %w", err)
	}
	ck := h.keys.conv(convKey)
	now := h.opts.Now()
	if mark.Newest == "" {
		mark = LogMark{}
	}
	b, err := h.r.beginRun(ctx, h.keys.run(convKey, runID), ck, h.ids.next(now), convKey, now, h.ids.next(now), mark)
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
	events, sizes, err := decodeLog(ck.log, b.from, b.log)
	if err != nil {
		return RunStart{}, fmt.Errorf("threads: begin run %s of %q: %w", runID, convKey, err)
	}
	st := RunStart{Thread: th, Created: b.created, Events: events, TurnSizes: sizes, Kept: b.from}
	count, _ := strconv.ParseInt(b.thread["ls"], 10, 64) // absent in a log no append counted yet
	switch {
	case len(b.log) > 0:
		st.Mark = LogMark{ThreadID: th.ID, Count: count, Newest: b.log[len(b.log)-1]}
	case b.from > 0:
		st.Mark = mark // nothing after it
	}
	return st, nil
}

// decodeLog reads the stored turns of the log at key, the first at index from, back into their
// events, oldest first, as decodeTurn does, and how many events each turn has. The events share
// one copy of the log's bytes.
func decodeLog(key string, from int, log []string) ([]json.RawMessage, []int, error) {
	if len(log) == 0 {
		return nil, nil, nil
	}
	sizes := make([]int, len(log))
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
		n := len(events)
		if events, err = appendTurn(events, key, from+i, turn); err != nil {
			return nil, nil, err
		}
		sizes[i] = len(events) - n
		if i == 0 {
			// The first turn's events per byte predict the rest: grow once rather than regrow.
			events = slices.Grow(events, len(events)*(size-len(turn))/len(turn))
		}
	}
	return events, sizes, nil
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
func (h *History) FinishRun(ctx context.Context, convKey, runID string, end RunEnd) (first bool, err error) {
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
	n, err := h.r.finishRun(ctx, h.keys.run(convKey, runID), h.keys.conv(convKey), end.Outcome, end.Result, h.opts.OutcomeTTL, end.ThreadID, turn, h.opts.HistoryTurns)
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
