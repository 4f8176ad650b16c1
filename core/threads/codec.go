package threads

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// This file holds the encoders and decoders of everything the store writes. Decoders treat
// stored bytes as untrusted (another version, a manual edit, a bug may have written them): any
// value they cannot make sense of is a *CorruptError, never a panic.

// decodeThread builds a Thread from the fields of a thread hash. convKey is the conversation
// the caller asked for; a record of another conversation is corrupt (a hash collision or an
// edited key).
func decodeThread(key, convKey string, f map[string]string) (Thread, error) {
	id := f["id"]
	if id == "" {
		return Thread{}, corrupt(key, "thread record has no id", nil)
	}
	if f["conv"] != convKey {
		return Thread{}, corrupt(key, "thread record belongs to another conversation", nil)
	}
	created, err := strconv.ParseInt(f["created"], 10, 64)
	if err != nil {
		return Thread{}, corrupt(key, "thread record has a bad creation time", err)
	}
	th := Thread{ID: id, ConvKey: convKey, CreatedAt: time.UnixMilli(created).UTC(), SessionID: f["session"]}
	if s, ok := f["settings"]; ok {
		if err := json.Unmarshal([]byte(s), &th.Settings); err != nil {
			return Thread{}, corrupt(key, "thread settings are not valid JSON", err)
		}
	}
	return th, nil
}

func encodeSettings(s Settings) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, invalid("settings: %v", err)
	}
	return b, nil
}

// encodeTurn writes the events of one turn as one JSON array: the unit the log stores, trims and
// loads. Each event must be valid JSON on its own; whitespace around an event is dropped (it
// would be lost on decoding anyway), whitespace inside it is kept.
func encodeTurn(events []json.RawMessage) ([]byte, error) {
	if len(events) == 0 {
		return nil, invalid("a turn needs at least one event")
	}
	n := 2
	for _, e := range events {
		n += len(e) + 1
	}
	buf := make([]byte, 0, n)
	buf = append(buf, '[')
	for i, e := range events {
		if !json.Valid(e) {
			return nil, invalid("event %d of the turn is not valid JSON", i)
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, bytes.TrimSpace(e)...)
	}
	return append(buf, ']'), nil
}

// decodeTurn reads one stored turn back into its events, each with the bytes it was appended
// with (less surrounding whitespace).
func decodeTurn(key string, index int, data []byte) ([]json.RawMessage, error) {
	return appendTurn(nil, key, index, data)
}

// appendTurn is decodeTurn appending the turn's events to dst.
func appendTurn(dst []json.RawMessage, key string, index int, data []byte) ([]json.RawMessage, error) {
	var events []json.RawMessage
	err := json.Unmarshal(data, &events)
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr), err == nil && events == nil: // another value, or null
		return nil, corrupt(key, fmt.Sprintf("turn %d is not a JSON array", index), nil)
	case err != nil:
		return nil, corrupt(key, fmt.Sprintf("turn %d is not valid JSON", index), err)
	case len(events) == 0:
		return nil, corrupt(key, fmt.Sprintf("turn %d has no events", index), nil)
	}
	return append(dst, events...), nil
}

// storedClarification is the immutable part of a clarification as stored in the "data" field.
// The mutable part (state, who answered) lives in separate hash fields that the scripts update.
type storedClarification struct {
	ID            string          `json:"id"`
	ConvKey       string          `json:"conv"`
	RunID         string          `json:"run"`
	AllowedUserID string          `json:"user"`
	Form          json.RawMessage `json:"form,omitempty"`
	CreatedAt     int64           `json:"created"`
	ExpiresAt     int64           `json:"expires"`
}

func encodeClarification(c Clarification) ([]byte, error) {
	b, err := json.Marshal(storedClarification{
		ID: c.ID, ConvKey: c.ConvKey, RunID: c.RunID, AllowedUserID: c.AllowedUserID, Form: c.Form,
		CreatedAt: c.CreatedAt.UnixMilli(), ExpiresAt: c.ExpiresAt.UnixMilli(),
	})
	if err != nil {
		return nil, invalid("clarification %s: %v", c.ID, err)
	}
	return b, nil
}

// decodeClarification builds a Clarification from the fields of a clarification hash.
func decodeClarification(key string, f map[string]string) (Clarification, error) {
	data, ok := f["data"]
	if !ok {
		return Clarification{}, corrupt(key, "clarification has no data", nil)
	}
	var s storedClarification
	if err := json.Unmarshal([]byte(data), &s); err != nil {
		return Clarification{}, corrupt(key, "clarification data is not valid JSON", err)
	}
	switch {
	case s.ID == "" || s.ID != f["id"]:
		return Clarification{}, corrupt(key, "clarification id does not match its record", nil)
	case s.ConvKey == "":
		return Clarification{}, corrupt(key, "clarification has no conversation", nil)
	case s.AllowedUserID == "" || s.AllowedUserID != f["user"]:
		return Clarification{}, corrupt(key, "clarification user does not match its record", nil)
	case s.ExpiresAt <= 0 || strconv.FormatInt(s.ExpiresAt, 10) != f["exp"]:
		return Clarification{}, corrupt(key, "clarification expiry does not match its record", nil)
	}
	c := Clarification{
		ID: s.ID, ConvKey: s.ConvKey, RunID: s.RunID, AllowedUserID: s.AllowedUserID,
		CreatedAt: time.UnixMilli(s.CreatedAt).UTC(), ExpiresAt: time.UnixMilli(s.ExpiresAt).UTC(),
	}
	if len(s.Form) > 0 && !bytes.Equal(s.Form, []byte("null")) {
		c.Form = s.Form
	}
	switch st := ClarificationState(f["state"]); st {
	case StatePending, StateCancelled:
		c.State = st
	case StateAnswered:
		c.State = st
		c.AnsweredBy = f["answered_by"]
		at, err := strconv.ParseInt(f["answered_at"], 10, 64)
		if err != nil {
			return Clarification{}, corrupt(key, "clarification has a bad answer time", err)
		}
		c.AnsweredAt = time.UnixMilli(at).UTC()
	default:
		return Clarification{}, corrupt(key, fmt.Sprintf("clarification has unknown state %q", st), nil)
	}
	return c, nil
}
