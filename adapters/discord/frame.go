package discord

import (
	"encoding/json"
	"fmt"
	"time"
)

// The gateway's frames: opcodes, the payload, and the decoders of what a connection reads
// before its events (HELLO, op 9's d).

// Gateway opcodes.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatAck   = 11
)

// gatewayVersion is the API version of the gateway URL (the REST calls use discordgo's v9).
const gatewayVersion = "9"

// frame is one gateway payload.
type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  int64           `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

// decodeFrame reads one gateway message: a dispatch's d is kept raw for the event's own decoder.
// Its errors are encoding/json's, which say what is wrong.
func decodeFrame(data []byte) (frame, error) {
	var f frame
	err := json.Unmarshal(data, &f)
	return f, err
}

// maxHeartbeatInterval bounds the interval HELLO may announce (Discord's is 41.25 s): more would
// be no heartbeat at all, and milliseconds past it overflow a time.Duration.
const maxHeartbeatInterval = 24 * time.Hour

// decodeHello reads a connection's first message, op 10 HELLO, and returns its heartbeat
// interval. It fails on anything else: invalid JSON, another op, an interval that is missing,
// not a positive number of milliseconds, or over maxHeartbeatInterval.
func decodeHello(data []byte) (time.Duration, error) {
	f, err := decodeFrame(data)
	if err != nil {
		return 0, fmt.Errorf("discord: gateway did not say hello: %w: %w", errMalformed, err)
	}
	if f.Op != opHello {
		return 0, fmt.Errorf("discord: gateway did not say hello (op %d)", f.Op)
	}
	var d struct {
		Interval *float64 `json:"heartbeat_interval"`
	}
	if err := json.Unmarshal(f.D, &d); err != nil || d.Interval == nil {
		return 0, fmt.Errorf("discord: gateway hello without heartbeat_interval: %w", errMalformed)
	}
	ms := *d.Interval
	if !(ms >= 1) || ms > float64(maxHeartbeatInterval/time.Millisecond) {
		return 0, fmt.Errorf("discord: gateway hello with heartbeat_interval %v ms: %w", ms, errMalformed)
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// decodeInvalidSession reads op 9's d: whether the session may be resumed. Anything but a JSON
// boolean is an error (and then false: identifying again is always safe).
func decodeInvalidSession(d json.RawMessage) (resumable bool, err error) {
	if err := json.Unmarshal(d, &resumable); err != nil || len(d) == 0 || string(d) == "null" {
		return false, fmt.Errorf("%w: invalid session d %.40q", errMalformed, d)
	}
	return resumable, nil
}
