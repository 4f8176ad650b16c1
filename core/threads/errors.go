package threads

import (
	"errors"
	"fmt"
)

// Sentinel errors returned by the Store's components, wrapped with context; match them with
// errors.Is.
var (
	// ErrInvalidArgument means the caller passed a value the store refuses to write (an empty
	// conversation key, an event that is not JSON, a clarification without an answering user…).
	ErrInvalidArgument = errors.New("threads: invalid argument")
	// ErrThreadNotFound means no thread exists for the conversation key (Ensure creates one).
	ErrThreadNotFound = errors.New("threads: thread not found")
	// ErrStaleThread means a turn was appended for a thread that is no longer the conversation's
	// current one (it was reset with `new` after the run started); the turn was not stored.
	ErrStaleThread = errors.New("threads: thread was reset")
	// ErrClarificationNotFound means no clarification with that id is known (never put, or its
	// record has been cleaned up long after it expired).
	ErrClarificationNotFound = errors.New("threads: clarification not found")
	// ErrClarificationExpired means the clarification passed its ExpiresAt before it was answered.
	ErrClarificationExpired = errors.New("threads: clarification expired")
	// ErrClarificationOpen means Clarifications.TakeExpired found the clarification still has time.
	ErrClarificationOpen = errors.New("threads: clarification still open")
	// ErrClarificationAnswered means the clarification was already claimed by an earlier answer.
	ErrClarificationAnswered = errors.New("threads: clarification already answered")
	// ErrClarificationCancelled means the clarification was withdrawn before it was answered: the
	// conversation was reset, or a newer clarification replaced it.
	ErrClarificationCancelled = errors.New("threads: clarification cancelled")
	// ErrNotYourClarification means someone other than the allowed user tried to answer; the
	// clarification stays pending. The concrete error is a *ForeignAnswerError.
	ErrNotYourClarification = errors.New("threads: clarification belongs to another user")
	// ErrDuplicateClarification means a clarification id is already in use by another conversation.
	ErrDuplicateClarification = errors.New("threads: clarification id already used")
	// ErrTokenNotFound means a short token is unknown or has expired.
	ErrTokenNotFound = errors.New("threads: token not found")
	// ErrInvalidToken means a string is not shaped like a token this store issues.
	ErrInvalidToken = errors.New("threads: invalid token")
	// ErrCorrupt means a stored value could not be decoded; the concrete error is a *CorruptError.
	ErrCorrupt = errors.New("threads: corrupt stored data")
)

// ForeignAnswerError is returned by Clarifications.Take when UserID is not the user the
// clarification was asked of. It matches ErrNotYourClarification with errors.Is. The
// clarification is left pending for the allowed user.
type ForeignAnswerError struct {
	ClarificationID string
	UserID          string
}

func (e *ForeignAnswerError) Error() string {
	return fmt.Sprintf("threads: clarification %s: user %s may not answer it", e.ClarificationID, e.UserID)
}

// Is reports whether target is ErrNotYourClarification.
func (e *ForeignAnswerError) Is(target error) bool { return target == ErrNotYourClarification }

// CorruptError describes a stored value that failed to decode: which key and why. It matches
// ErrCorrupt with errors.Is; Err, when set, is the underlying decode error.
type CorruptError struct {
	Key    string
	Reason string
	Err    error
}

func (e *CorruptError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("threads: corrupt data at %s: %s: %v", e.Key, e.Reason, e.Err)
	}
	return fmt.Sprintf("threads: corrupt data at %s: %s", e.Key, e.Reason)
}

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the underlying decode error, if any.
func (e *CorruptError) Unwrap() error { return e.Err }

func corrupt(key, reason string, err error) error {
	return &CorruptError{Key: key, Reason: reason, Err: err}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}
