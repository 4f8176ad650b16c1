package lead

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/tools"
)

// ClarifyToolName is the name the model calls to ask the user a question.
const ClarifyToolName = "ask_clarification"

// Limits of one clarification form; larger requests get a clear tool error.
const (
	MaxFields        = 5
	MaxOptions       = 25
	MaxLabelRunes    = 80
	MaxOptionRunes   = 75
	MaxQuestionRunes = 1000
)

const clarifyParams = `{
  "type": "object",
  "properties": {
    "question": {"type": "string", "description": "The question to ask the user, in one or two sentences."},
    "fields": {
      "type": "array",
      "description": "Up to 5 inputs. Omit for a free-text answer.",
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "string", "description": "A short identifier for the answer, e.g. \"size\"."},
          "label": {"type": "string", "description": "What the field asks, shown to the user."},
          "kind": {"type": "string", "enum": ["choice", "multi_choice", "text", "confirm"]},
          "options": {"type": "array", "items": {"type": "string"}, "description": "The choices, for choice and multi_choice (2 to 25)."},
          "required": {"type": "boolean"}
        },
        "required": ["id", "label", "kind"],
        "additionalProperties": false
      }
    },
    "allow_free_text": {"type": "boolean", "description": "Whether the user may answer in their own words instead."}
  },
  "required": ["question"],
  "additionalProperties": false
}`

type clarifyArgs struct {
	Question      string `json:"question"`
	AllowFreeText bool   `json:"allow_free_text"`
	Fields        []struct {
		ID       string   `json:"id"`
		Label    string   `json:"label"`
		Kind     string   `json:"kind"`
		Options  []string `json:"options"`
		Required bool     `json:"required"`
	} `json:"fields"`
}

// parseClarification turns checked tool arguments into a form, or lists every limit broken.
func parseClarification(raw json.RawMessage) (runs.Form, []string) {
	var a clarifyArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return runs.Form{}, []string{"arguments are not a valid clarification: " + err.Error()}
	}
	var problems []string
	q := strings.TrimSpace(a.Question)
	switch n := utf8.RuneCountInString(q); {
	case n == 0:
		problems = append(problems, "question must not be empty")
	case n > MaxQuestionRunes:
		problems = append(problems, fmt.Sprintf("question is %d characters; the limit is %d", n, MaxQuestionRunes))
	}
	if len(a.Fields) > MaxFields {
		problems = append(problems, fmt.Sprintf("%d fields; the limit is %d", len(a.Fields), MaxFields))
	}
	form := runs.Form{Question: q, AllowFreeText: a.AllowFreeText || len(a.Fields) == 0}
	seen := map[string]bool{}
	for i, f := range a.Fields {
		at := fmt.Sprintf("fields[%d]", i)
		id := strings.TrimSpace(f.ID)
		if id == "" {
			problems = append(problems, at+".id must not be empty")
		} else if seen[id] {
			problems = append(problems, fmt.Sprintf("%s.id %q is used twice", at, id))
		}
		seen[id] = true
		label := strings.TrimSpace(f.Label)
		if label == "" {
			problems = append(problems, at+".label must not be empty")
		} else if n := utf8.RuneCountInString(label); n > MaxLabelRunes {
			problems = append(problems, fmt.Sprintf("%s.label is %d characters; the limit is %d", at, n, MaxLabelRunes))
		}
		kind := runs.FieldKind(f.Kind)
		switch kind {
		case runs.FieldChoice, runs.FieldMultiChoice:
			if len(f.Options) < 2 {
				problems = append(problems, at+".options needs at least 2 choices")
			}
			if len(f.Options) > MaxOptions {
				problems = append(problems, fmt.Sprintf("%s.options has %d choices; the limit is %d", at, len(f.Options), MaxOptions))
			}
			for j, o := range f.Options {
				if strings.TrimSpace(o) == "" {
					problems = append(problems, fmt.Sprintf("%s.options[%d] must not be empty", at, j))
				} else if n := utf8.RuneCountInString(o); n > MaxOptionRunes {
					problems = append(problems, fmt.Sprintf("%s.options[%d] is %d characters; the limit is %d", at, j, n, MaxOptionRunes))
				}
			}
		case runs.FieldText, runs.FieldConfirm:
			if len(f.Options) > 0 {
				problems = append(problems, fmt.Sprintf("%s.options is only for choice and multi_choice fields", at))
			}
		default:
			problems = append(problems, fmt.Sprintf("%s.kind %q is not one of choice, multi_choice, text, confirm", at, f.Kind))
		}
		opts := make([]string, len(f.Options))
		for j, o := range f.Options {
			opts[j] = strings.TrimSpace(o)
		}
		form.Fields = append(form.Fields, runs.FormField{ID: id, Label: label, Kind: kind, Options: opts, Required: f.Required})
	}
	return form, problems
}

// asked is what the clarification tool, or a tool call waiting for approval, recorded for one
// run: at most one of them waits at a time.
type asked struct {
	mu       sync.Mutex
	lead     *agent.Agent
	form     *runs.Form
	callID   string
	approval *tools.ApprovalRequest
}

// waiting reports whether a question or an approval waits.
func (s *asked) waiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.form != nil || s.approval != nil
}

func (s *asked) get() (*runs.Form, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.form, s.callID
}

type askedKey struct{}

func withAsked(ctx context.Context, s *asked) context.Context {
	return context.WithValue(ctx, askedKey{}, s)
}

// clarifyTool is the ask_clarification tool: it checks the form, records it for the run, and the
// continuation hook then ends the lead's turn so the run can wait for the answer.
func clarifyTool() agent.Tool {
	return agent.Tool{
		Name: ClarifyToolName,
		Description: "Ask the user a clarifying question when the request is too vague to act on. " +
			"The run pauses until the user answers; their answer comes back as this tool's result.",
		Parameters: json.RawMessage(clarifyParams),
		Execute: func(ctx context.Context, call agent.ToolCall) agent.ToolResult {
			st, _ := ctx.Value(askedKey{}).(*asked)
			if st == nil || st.lead != call.Agent {
				return agent.Errorf(agent.CodeDenied, "only the lead agent can ask the user a question")
			}
			form, problems := parseClarification(call.Arguments)
			if len(problems) > 0 {
				return agent.Errorf(agent.CodeInvalidArgs, "invalid clarification: %s", strings.Join(problems, "; "))
			}
			st.mu.Lock()
			defer st.mu.Unlock()
			if st.form != nil || st.approval != nil {
				return agent.Errorf(agent.CodeDenied, "a question is already waiting for the user's answer")
			}
			st.form, st.callID = &form, call.ID
			return agent.ToolResult{Content: "The question was sent to the user; the run waits for the answer."}
		},
	}
}

// stopAfterAsking ends the lead's turn once it has asked, so no model step is spent while the
// user has not answered.
func stopAfterAsking(ctx context.Context, a *agent.Agent, s agent.Step, next agent.ContinueNext) bool {
	if st, _ := ctx.Value(askedKey{}).(*asked); st != nil && st.lead == a && st.waiting() {
		return false
	}
	return next(ctx, s)
}

// denyAfterAsking refuses further tool calls of the lead once a question is pending.
func denyAfterAsking(ctx context.Context, a *agent.Agent, c agent.ToolCall, next agent.PreToolNext) agent.Verdict {
	if st, _ := ctx.Value(askedKey{}).(*asked); st != nil && st.lead == a && c.Name != ClarifyToolName && st.waiting() {
		return agent.Verdict{Deny: true, Reason: "a question or an approval is waiting for the user; continue after it is answered"}
	}
	return next(ctx, c)
}
