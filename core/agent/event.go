package agent

import (
	"fmt"
	"sync"

	"github.com/switchboard-bot/switchboard/core/llm"
)

// Kind names what an Event records.
type Kind string

// The event kinds of a session log.
const (
	KindTurnStart        Kind = "turn/start"
	KindUserMessage      Kind = "user/message"
	KindStepStart        Kind = "step/start"
	KindAssistantChunk   Kind = "assistant/chunk"
	KindAssistantMessage Kind = "assistant/message"
	KindToolCall         Kind = "tool/call"
	KindToolResult       Kind = "tool/result"
	KindStepEnd          Kind = "step/end"
	KindTurnEnd          Kind = "turn/end"
)

// TurnEndReason says how a turn ended.
type TurnEndReason string

// The reasons a turn/end event carries.
const (
	TurnCompleted   TurnEndReason = "completed"
	TurnMaxTokens   TurnEndReason = "max-tokens"
	TurnAborted     TurnEndReason = "aborted"
	TurnError       TurnEndReason = "error"
	TurnDisposed    TurnEndReason = "disposed"
	TurnInterrupted TurnEndReason = "interrupted"
	TurnRejected    TurnEndReason = "rejected"
)

// Event is one entry of a session log. It holds values only (no slices, maps or pointers), so
// a copy of an Event is a deep copy and a written event can never be changed through a copy.
// Which fields are set depends on Kind.
type Event struct {
	Seq  int  `json:"seq"`
	Kind Kind `json:"kind"`
	Turn int  `json:"turn,omitempty"`
	Step int  `json:"step,omitempty"`
	// Trigger is why a turn started (turn/start): "user", "nudge", …
	Trigger string `json:"trigger,omitempty"`
	// Source is who wrote a user/message.
	Source string `json:"source,omitempty"`
	// Content is the text of user/message, assistant/chunk, assistant/message and tool/result.
	Content string `json:"content,omitempty"`
	// Reasoning is the model's hidden reasoning on assistant/message; never shown to users.
	Reasoning string    `json:"reasoning,omitempty"`
	Usage     llm.Usage `json:"usage,omitzero"`
	// CallID, Tool and Arguments describe tool/call and tool/result.
	CallID    string `json:"call_id,omitempty"`
	Tool      string `json:"tool,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	Code      Code   `json:"code,omitempty"`
	// Reason is the turn/end reason; Error its message when the turn failed.
	Reason TurnEndReason `json:"reason,omitempty"`
	Error  string        `json:"error,omitempty"`
}

// Header describes where a session comes from.
type Header struct {
	AgentID       string `json:"agent_id"`
	SessionID     string `json:"session_id"`
	Cwd           string `json:"cwd,omitempty"`
	ParentSession string `json:"parent_session,omitempty"`
	// SeedLength is how many events at the start of the log were seeded, not written by the
	// agent itself.
	SeedLength int `json:"seed_length,omitempty"`
}

// Session is an append-only, frozen log: Seq is the index from 0, and readers only ever get
// copies. Safe for concurrent use.
type Session struct {
	header Header
	mu     sync.RWMutex
	events []Event
}

// Header returns the session's header.
func (s *Session) Header() Header { return s.header }

// ID is the session id.
func (s *Session) ID() string { return s.header.SessionID }

// Len is the number of events written so far.
func (s *Session) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.events)
}

// Events returns a copy of the whole log.
func (s *Session) Events() []Event { return s.Since(0) }

// Since returns a copy of the events with Seq ≥ from.
func (s *Session) Since(from int) []Event {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if from < 0 {
		from = 0
	}
	if from >= len(s.events) {
		return nil
	}
	return append([]Event(nil), s.events[from:]...)
}

// Last returns a copy of the last event of the given kind with Seq ≥ from, without copying the
// log; ok is false when there is none.
func (s *Session) Last(kind Kind, from int) (e Event, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := len(s.events) - 1; i >= max(from, 0); i-- {
		if s.events[i].Kind == kind {
			return s.events[i], true
		}
	}
	return Event{}, false
}

// history builds the model history from the log in place: History only reads events (values),
// so the per-step copy of the whole log that Events() would make is not needed.
func (s *Session) history() []llm.Message {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return History(s.events)
}

func (s *Session) append(e Event) Event {
	s.mu.Lock()
	e.Seq = len(s.events)
	s.events = append(s.events, e)
	s.mu.Unlock()
	return e
}

// SeedError says why a seed was refused.
type SeedError struct {
	Index  int
	Reason string
}

func (e *SeedError) Error() string {
	return fmt.Sprintf("agent: seed event %d: %s", e.Index, e.Reason)
}

// checkSeed requires the seed to be contiguous from seq 0.
func checkSeed(seed []Event) error {
	for i, e := range seed {
		if e.Seq != i {
			return &SeedError{Index: i, Reason: fmt.Sprintf("has seq %d, want %d (a seed must be contiguous from 0)", e.Seq, i)}
		}
		if e.Kind == "" {
			return &SeedError{Index: i, Reason: "has no kind"}
		}
	}
	return nil
}

// CompletedPrefix returns the events up to and including the last turn/end: the completed
// turns, without a turn still open. It returns nil when no turn has ended.
func CompletedPrefix(events []Event) []Event {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == KindTurnEnd {
			return append([]Event(nil), events[:i+1]...)
		}
	}
	return nil
}

// History turns events into the chat messages a model is sent. Chunks, step and turn markers
// are left out; every tool call is paired with its result, and a call that never got one (a
// turn cut off mid-tool) is answered with a synthetic error so the history stays well formed.
func History(events []Event) []llm.Message {
	msgs := make([]llm.Message, 0, len(events)/2+1)
	pending := map[string]bool{}
	lastAssistant := -1
	closeDangling := func() {
		if lastAssistant < 0 {
			return
		}
		for _, tc := range msgs[lastAssistant].ToolCalls {
			if pending[tc.ID] {
				msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: "Error: the tool call was interrupted"})
				delete(pending, tc.ID)
			}
		}
		lastAssistant = -1
	}
	for _, e := range events {
		switch e.Kind {
		case KindUserMessage:
			closeDangling()
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: e.Content})
		case KindAssistantMessage:
			closeDangling()
			msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: e.Content})
			lastAssistant = len(msgs) - 1
		case KindToolCall:
			if lastAssistant < 0 {
				continue
			}
			msgs[lastAssistant].ToolCalls = append(msgs[lastAssistant].ToolCalls, llm.ToolCall{ID: e.CallID, Name: e.Tool, Arguments: e.Arguments})
			pending[e.CallID] = true
		case KindToolResult:
			if !pending[e.CallID] {
				continue
			}
			delete(pending, e.CallID)
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: e.CallID, Content: e.Content})
		case KindTurnEnd:
			closeDangling()
		}
	}
	closeDangling()
	return msgs
}
