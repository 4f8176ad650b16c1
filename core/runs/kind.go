package runs

// Kind is what an envelope asks the worker to do.
type Kind string

// The envelope kinds.
const (
	KindMessage             Kind = "message"
	KindClarificationAnswer Kind = "clarification_answer"
	KindCommand             Kind = "command"
)

// Valid reports whether k is one of the defined kinds.
func (k Kind) Valid() bool {
	switch k {
	case KindMessage, KindClarificationAnswer, KindCommand:
		return true
	}
	return false
}
