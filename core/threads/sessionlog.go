package threads

import (
	"context"
	"encoding/json"
	"fmt"
)

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
func (s *Store) AppendTurn(ctx context.Context, convKey, threadID string, events []json.RawMessage) error {
	if err := checkConvKey(convKey); err != nil {
		return fmt.Errorf("threads: append turn: %w", err)
	}
	turn, err := encodeTurn(events)
	if err != nil {
		return fmt.Errorf("threads: append turn to %q: %w", convKey, err)
	}
	n, err := s.r.appendTurn(ctx, s.keys.conv(convKey), threadID, turn, s.opts.HistoryTurns)
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
func (s *Store) LoadTurns(ctx context.Context, convKey string) ([][]json.RawMessage, error) {
	var turns [][]json.RawMessage
	err := s.eachTurn(ctx, "load turns", convKey, func(n int, events []json.RawMessage) {
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
func (s *Store) LoadEvents(ctx context.Context, convKey string) ([]json.RawMessage, error) {
	var events []json.RawMessage
	err := s.eachTurn(ctx, "load events", convKey, func(n int, turn []json.RawMessage) {
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
func (s *Store) eachTurn(ctx context.Context, op, convKey string, fn func(n int, events []json.RawMessage)) error {
	if err := checkConvKey(convKey); err != nil {
		return fmt.Errorf("threads: %s: %w", op, err)
	}
	key := s.keys.conv(convKey).log
	raw, err := s.r.loadTurns(ctx, key)
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
