package channels

import (
	"context"
	"errors"
)

// Streamer can show an answer as it is written, in one message that grows (Slack's
// chat.startStream / appendStream / stopStream), with the run's subagents as tasks of a plan
// in it. Delivery drives it where CanStream allows; every call's error wrapping ErrStreamRefused
// makes delivery carry on by post-and-edit, in the same message, without repeating what it
// shows.
type Streamer interface {
	// CanStream reports, without I/O, whether a stream may be started in the conversation (to
	// names the conversation, the message answered and the user answered).
	CanStream(to Target) bool
	// StartStream posts the stream's message with u; the ref names it for the calls after.
	StartStream(ctx context.Context, to Target, u StreamUpdate) (MessageRef, error)
	// AppendStream adds u to the message (u.Text after the text already shown).
	AppendStream(ctx context.Context, ref MessageRef, u StreamUpdate) error
	// StopStream adds u and ends the stream: the message is final (and the working signal
	// cleared).
	StopStream(ctx context.Context, ref MessageRef, u StreamUpdate) error
}

// StreamUpdate is what one stream call adds: markdown text, a new plan title ("" keeps it) and
// task updates.
type StreamUpdate struct {
	Text  string
	Plan  string
	Tasks []StreamTask
}

// Empty reports whether u adds nothing.
func (u StreamUpdate) Empty() bool { return u.Text == "" && u.Plan == "" && len(u.Tasks) == 0 }

// TaskStatus is a stream task's state.
type TaskStatus string

// The task states delivery reports.
const (
	TaskRunning TaskStatus = "in_progress"
	TaskDone    TaskStatus = "complete"
	TaskFailed  TaskStatus = "error"
)

// StreamTask is one task of a stream's plan: a subagent, by its id. Output is its one-line
// result once it ended.
type StreamTask struct {
	ID, Title string
	Status    TaskStatus
	Output    string
}

// ErrStreamRefused means the platform or the conversation will not (or no longer) stream: the
// method is unknown, the recipient is not found, the message left its streaming state, or the
// conversation is not one the platform streams in. Delivery continues by post-and-edit.
var ErrStreamRefused = errors.New("channels: the platform refused to stream here")

// StreamDropper is a Streamer whose stream shows nothing lasting until it is stopped —
// Telegram's drafts, which StopStream posts as the answer's message. Where delivery hands a
// stream over to post-and-edit (a notice, a new attempt, a final card that replaces the
// streamed text) it drops such a stream instead of stopping it, so that text about to be edited
// away is never posted; the next Edit of the stream's ref posts its message in the stream's
// place.
type StreamDropper interface {
	// DropStream ends the stream without posting what it showed; ref stays the name of the
	// stream's place for Edit and Delete.
	DropStream(ctx context.Context, ref MessageRef) error
}
