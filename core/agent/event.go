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

// Event is one entry of a session log. It holds values only (no slices, maps or pointers; Err
// is an error value, never changed once written), so a copy of an Event is a deep copy and a
// written event can never be changed through a copy. Which fields are set depends on Kind.
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
	// Err is the error that ended a turn (turn/end with TurnError), when one did: a *ModelError
	// when the model call failed. Error is its text. It lives only in the running session: an
	// event read back from storage has Error alone.
	Err error `json:"-"`
	// Images go with a user/message to the model, as image parts of its request. They live in
	// memory only — the JSON encoding leaves them out — so a stored history
	// keeps the message's text (which says what was attached), not the bytes. A pointer, so
	// that events stay comparable.
	Images *[]llm.Image `json:"-"`
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
//
// A session forked from another (CreateOptions.ForkFrom) starts with that session's completed
// turns as read-only segments shared with it: written events never change, so sharing them is
// as good as a copy. A seed given with CreateOptions.ShareSeed is such a segment too.
type Session struct {
	header  Header
	mu      sync.RWMutex
	shared  [][]Event // the forked or shared seed, in order; never written to
	nshared int       // how many events shared holds
	events  []Event   // the rest of the log, from Seq nshared on
}

// Header returns the session's header.
func (s *Session) Header() Header { return s.header }

// ID is the session id.
func (s *Session) ID() string { return s.header.SessionID }

// Len is the number of events written so far.
func (s *Session) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.nshared + len(s.events)
}

// Events returns a copy of the whole log.
func (s *Session) Events() []Event { return s.Since(0) }

// Since returns a copy of the events with Seq ≥ from.
func (s *Session) Since(from int) []Event {
	s.mu.RLock()
	defer s.mu.RUnlock()
	from = max(from, 0)
	total := s.nshared + len(s.events)
	if from >= total {
		return nil
	}
	out := make([]Event, 0, total-from)
	off := 0
	for _, seg := range s.shared {
		if from < off+len(seg) {
			out = append(out, seg[max(from-off, 0):]...)
		}
		off += len(seg)
	}
	return append(out, s.events[max(from-s.nshared, 0):]...)
}

// Last returns a copy of the last event of the given kind with Seq ≥ from, without copying the
// log; ok is false when there is none.
func (s *Session) Last(kind Kind, from int) (e Event, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	from = max(from, 0)
	for i := len(s.events) - 1; i >= 0 && s.nshared+i >= from; i-- {
		if s.events[i].Kind == kind {
			return s.events[i], true
		}
	}
	off := s.nshared
	for k := len(s.shared) - 1; k >= 0; k-- {
		seg := s.shared[k]
		off -= len(seg)
		for i := len(seg) - 1; i >= 0 && off+i >= from; i-- {
			if seg[i].Kind == kind {
				return seg[i], true
			}
		}
	}
	return Event{}, false
}

// completedPrefix returns the events up to and including the last turn/end as segments that
// share this session's memory (each capped, so nothing can be appended through them), and how
// many events they hold; none when no turn has ended.
func (s *Session) completedPrefix() ([][]Event, int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := len(s.events) - 1; i >= 0; i-- {
		if s.events[i].Kind == KindTurnEnd {
			segs := make([][]Event, len(s.shared), len(s.shared)+1)
			copy(segs, s.shared)
			return append(segs, s.events[:i+1:i+1]), s.nshared + i + 1
		}
	}
	off := s.nshared
	for k := len(s.shared) - 1; k >= 0; k-- {
		seg := s.shared[k]
		off -= len(seg)
		for i := len(seg) - 1; i >= 0; i-- {
			if seg[i].Kind == KindTurnEnd {
				segs := make([][]Event, k+1)
				copy(segs, s.shared[:k])
				segs[k] = seg[: i+1 : i+1]
				return segs, off + i + 1
			}
		}
	}
	return nil, 0
}

// history builds the model history from the log in place: History only reads events (values),
// so the per-step copy of the whole log that Events() would make is not needed.
func (s *Session) history() []llm.Message {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := messagesIn(s.events)
	for _, seg := range s.shared {
		n += messagesIn(seg)
	}
	var b historyBuilder
	b.init(n)
	for _, seg := range s.shared {
		for i := range seg {
			b.add(&seg[i])
		}
	}
	for i := range s.events {
		b.add(&s.events[i])
	}
	return b.finish()
}

func (s *Session) append(e *Event) {
	s.mu.Lock()
	e.Seq = s.nshared + len(s.events)
	s.events = append(s.events, *e)
	s.mu.Unlock()
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
	var b historyBuilder
	b.init(messagesIn(events))
	for i := range events {
		b.add(&events[i])
	}
	return b.finish()
}

// historyBuilder turns events into messages one at a time (see History).
type historyBuilder struct {
	msgs          []llm.Message
	pending       []string // call ids of the last assistant message still waiting for a result
	lastAssistant int
}

// init sizes the history for n messages.
func (b *historyBuilder) init(n int) {
	b.msgs = make([]llm.Message, 0, n)
	b.lastAssistant = -1
}

// messagesIn counts the events that become a message of their own, so the history is sized
// once (a synthetic answer to an interrupted call, which is rare, grows it).
func messagesIn(events []Event) int {
	n := 0
	for i := range events {
		switch events[i].Kind {
		case KindUserMessage, KindAssistantMessage, KindToolResult:
			n++
		}
	}
	return n
}

func (b *historyBuilder) add(e *Event) {
	switch e.Kind {
	case KindUserMessage:
		b.closeDangling()
		b.push(llm.RoleUser, e.Content, "")
		if e.Images != nil {
			b.msgs[len(b.msgs)-1].Images = *e.Images
		}
	case KindAssistantMessage:
		b.closeDangling()
		b.push(llm.RoleAssistant, e.Content, "")
		b.lastAssistant = len(b.msgs) - 1
	case KindToolCall:
		if b.lastAssistant < 0 {
			return
		}
		m := &b.msgs[b.lastAssistant]
		m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: e.CallID, Name: e.Tool, Arguments: e.Arguments})
		if !b.unpend(e.CallID, false) {
			b.pending = append(b.pending, e.CallID)
		}
	case KindToolResult:
		if !b.unpend(e.CallID, true) {
			return
		}
		b.push(llm.RoleTool, e.Content, e.CallID)
	case KindTurnEnd:
		b.closeDangling()
	}
}

// push appends one message; not inlined, so add's frame (live while the history is built)
// holds no message literals.
//
//go:noinline
func (b *historyBuilder) push(role llm.Role, content, toolCallID string) {
	b.msgs = append(b.msgs, llm.Message{Role: role, Content: content, ToolCallID: toolCallID})
}

// unpend reports whether id is pending, and removes it if remove is set.
func (b *historyBuilder) unpend(id string, remove bool) bool {
	for i, p := range b.pending {
		if p == id {
			if remove {
				b.pending = append(b.pending[:i], b.pending[i+1:]...)
			}
			return true
		}
	}
	return false
}

// closeDangling answers the last assistant message's calls that got no result.
func (b *historyBuilder) closeDangling() {
	if b.lastAssistant < 0 {
		return
	}
	for _, tc := range b.msgs[b.lastAssistant].ToolCalls {
		if b.unpend(tc.ID, true) {
			b.push(llm.RoleTool, "Error: the tool call was interrupted", tc.ID)
		}
	}
	b.lastAssistant = -1
}

func (b *historyBuilder) finish() []llm.Message {
	b.closeDangling()
	return b.msgs
}
