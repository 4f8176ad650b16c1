// Package render turns a platform-neutral Card into what each chat platform
// accepts: Slack Block Kit, Discord embeds and components, Telegram HTML with
// inline keyboards, and plain text. It also converts the model's markdown into
// each platform's dialect, chunks text to each platform's limits, neutralizes
// mass mentions, and signs the interactive ids that come back on a click.
//
// Renderers produce plain Go structs whose JSON encoding is the platform's wire
// format; adapters marshal them or unmarshal them into their SDK's types. This
// package imports only the standard library and goldmark.
package render

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Status is the state of the run a Card reports.
type Status string

// The statuses a Card can show. Each has its own colour and emoji.
const (
	StatusWorking   Status = "working"
	StatusWaiting   Status = "waiting"
	StatusDone      Status = "done"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Card is what the user sees of one run: the unit every renderer consumes.
// Only Title and Status are required; every other part is optional.
type Card struct {
	Title  string
	Status Status
	// Body is markdown from the model; renderers convert it to each dialect.
	Body string
	// Fields are short label/value facts shown under the body.
	Fields []Field
	// Subagents are the results (or, while Status is working, the progress)
	// of delegated subagents, one section each, in the order given. Every
	// renderer shows them under the title and before the body: the results
	// come before the answer that draws on them.
	Subagents []SubagentResult
	// Actions are buttons under the card (for example "Cancel").
	Actions []Action
	// Form is a clarification the run is waiting on; nil when there is none.
	Form   *Form
	Footer Footer
}

// Field is one label/value pair. Inline fields may be laid out side by side.
type Field struct {
	Label  string
	Value  string
	Inline bool
}

// SubagentResult is one delegated subagent's outcome. An empty StopReason means
// the subagent is still running. Structured holds its structured output, one
// field per top-level key (see FieldsFromJSON).
type SubagentResult struct {
	Name       string
	StopReason string
	Summary    string
	Structured []Field
}

// Running reports whether the subagent has not finished yet.
func (s SubagentResult) Running() bool { return s.StopReason == "" }

// ButtonStyle is how an action button looks; the zero value is the default.
type ButtonStyle int

// Button styles understood by every renderer (platforms without styles ignore them).
const (
	StyleDefault ButtonStyle = iota
	StylePrimary
	StyleDanger
)

// Action is a button on a card. ID says what a click resumes; renderers sign it
// with the caller's Key, so the id that comes back can be trusted after
// DecodeAction.
type Action struct {
	Label string
	Style ButtonStyle
	ID    ActionID
}

// FieldKind is the kind of answer a form field asks for.
type FieldKind string

// Form field kinds, as the ask_clarification tool names them.
const (
	KindChoice      FieldKind = "choice"
	KindMultiChoice FieldKind = "multi_choice"
	KindText        FieldKind = "text"
	KindConfirm     FieldKind = "confirm"
)

// Form limits enforced by Validate; ask_clarification enforces the same.
const (
	MaxFormFields  = 5
	MaxFormOptions = 25
)

// Form is a clarification: a question and the fields that answer it.
type Form struct {
	// Token identifies the pending clarification; it is carried, signed, in
	// every interactive id the form produces. Up to MaxTokenLen characters of
	// [A-Za-z0-9_-].
	Token    string
	Question string // markdown
	Fields   []FormField
	// AllowFreeText lets the user answer in their own words instead.
	AllowFreeText bool
	// Step is the field being asked on platforms that ask one field at a
	// time (Telegram, plain text). The caller advances it as answers arrive.
	Step int
}

// FormField is one question of a form. Options are answered by index; a
// confirm field has the implicit options Yes (0) and No (1).
type FormField struct {
	ID       string
	Label    string
	Kind     FieldKind
	Options  []string
	Required bool
	// Selected are the option indexes already chosen (multi_choice fields
	// asked one option click at a time); renderers show them as ticked.
	Selected []int
}

// confirmOptions are the options of a KindConfirm field, in index order.
var confirmOptions = []string{"Yes", "No"}

// choices returns the options the user picks from for the field.
func (f FormField) choices() []string {
	if f.Kind == KindConfirm {
		return confirmOptions
	}
	return f.Options
}

func (f FormField) isSelected(i int) bool {
	for _, s := range f.Selected {
		if s == i {
			return true
		}
	}
	return false
}

// Footer identifies the run: a short run id and how long it has taken.
type Footer struct {
	RunID   string
	Elapsed time.Duration
}

// ErrInvalidCard is wrapped by every error Validate returns.
var ErrInvalidCard = errors.New("render: invalid card")

// Validate reports whether the card can be rendered: a known status, a
// non-empty title, and a well-formed form (1–MaxFormFields fields, known kinds,
// non-empty options for choice fields, at most MaxFormOptions options, a valid
// token and Step in range). Renderers call it first; the error wraps ErrInvalidCard.
func (c Card) Validate() error {
	switch c.Status {
	case StatusWorking, StatusWaiting, StatusDone, StatusFailed, StatusCancelled:
	default:
		return fmt.Errorf("%w: unknown status %q", ErrInvalidCard, c.Status)
	}
	if c.Title == "" {
		return fmt.Errorf("%w: empty title", ErrInvalidCard)
	}
	for i, a := range c.Actions {
		if a.Label == "" {
			return fmt.Errorf("%w: action %d has no label", ErrInvalidCard, i)
		}
	}
	if c.Form == nil {
		return nil
	}
	f := c.Form
	if err := checkToken(f.Token); err != nil {
		return fmt.Errorf("%w: form token: %w", ErrInvalidCard, err)
	}
	if len(f.Fields) == 0 || len(f.Fields) > MaxFormFields {
		return fmt.Errorf("%w: form has %d fields, want 1–%d", ErrInvalidCard, len(f.Fields), MaxFormFields)
	}
	if f.Step < 0 || f.Step >= len(f.Fields) {
		return fmt.Errorf("%w: form step %d out of range", ErrInvalidCard, f.Step)
	}
	for i, fld := range f.Fields {
		switch fld.Kind {
		case KindChoice, KindMultiChoice:
			if len(fld.Options) == 0 {
				return fmt.Errorf("%w: field %d (%s) has no options", ErrInvalidCard, i, fld.Kind)
			}
		case KindText, KindConfirm:
		default:
			return fmt.Errorf("%w: field %d has unknown kind %q", ErrInvalidCard, i, fld.Kind)
		}
		if len(fld.Options) > MaxFormOptions {
			return fmt.Errorf("%w: field %d has %d options, max %d", ErrInvalidCard, i, len(fld.Options), MaxFormOptions)
		}
		if fld.Label == "" {
			return fmt.Errorf("%w: field %d has no label", ErrInvalidCard, i)
		}
		for j, o := range fld.Options {
			if strings.TrimSpace(o) == "" {
				return fmt.Errorf("%w: field %d option %d is empty", ErrInvalidCard, i, j)
			}
		}
	}
	return nil
}
