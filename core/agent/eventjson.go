package agent

import (
	"encoding/json"
	"strconv"

	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/internal/jsonwire"
)

// AppendEvent appends the JSON of e to dst: exactly the bytes json.Marshal(e) returns (the same
// keys in the same order, the same omissions, the same escapes), written by hand. It exists for
// saving histories, which every answered run does.
func AppendEvent(dst []byte, e *Event) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, int64(e.Seq), 10)
	dst = append(dst, `,"kind":`...)
	dst = jsonwire.AppendQuote(dst, string(e.Kind))
	dst = appendIntField(dst, `,"turn":`, e.Turn)
	dst = appendIntField(dst, `,"step":`, e.Step)
	dst = appendStringField(dst, `,"trigger":`, e.Trigger)
	dst = appendStringField(dst, `,"source":`, e.Source)
	dst = appendStringField(dst, `,"content":`, e.Content)
	dst = appendStringField(dst, `,"reasoning":`, e.Reasoning)
	if e.Usage != (llm.Usage{}) {
		dst = append(dst, `,"usage":{"prompt_tokens":`...)
		dst = strconv.AppendInt(dst, int64(e.Usage.PromptTokens), 10)
		dst = append(dst, `,"completion_tokens":`...)
		dst = strconv.AppendInt(dst, int64(e.Usage.CompletionTokens), 10)
		dst = append(dst, `,"total_tokens":`...)
		dst = strconv.AppendInt(dst, int64(e.Usage.TotalTokens), 10)
		dst = append(dst, '}')
	}
	dst = appendStringField(dst, `,"call_id":`, e.CallID)
	dst = appendStringField(dst, `,"tool":`, e.Tool)
	dst = appendStringField(dst, `,"arguments":`, e.Arguments)
	if e.IsError {
		dst = append(dst, `,"is_error":true`...)
	}
	dst = appendStringField(dst, `,"code":`, string(e.Code))
	dst = appendStringField(dst, `,"reason":`, string(e.Reason))
	dst = appendStringField(dst, `,"error":`, e.Error)
	return append(dst, '}')
}

// appendIntField appends an omitempty int field: nothing when v is 0.
func appendIntField(dst []byte, key string, v int) []byte {
	if v == 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, key...), int64(v), 10)
}

// appendStringField appends an omitempty string field: nothing when v is empty.
func appendStringField(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return jsonwire.AppendQuote(append(dst, key...), v)
}

// DecodeEvent decodes the JSON of one event into e exactly as json.Unmarshal(data, e) does: the
// same fields are set (fields data does not name keep their values), and the same error is
// returned, with e changed as json.Unmarshal would change it.
//
// It exists for loading histories, where every run decodes every stored event of its thread:
// events as json.Marshal writes them (known keys in any order, integers, strings with any
// escapes) are read by hand, without reflection, and values that repeat (kinds, end reasons,
// triggers, codes) without allocating. Anything else — unknown or differently cased keys,
// null, numbers that are not plain integers, invalid JSON — is left to encoding/json.
func DecodeEvent(data []byte, e *Event) error {
	v := *e
	if decodeEventFast(data, &v) {
		*e = v
		return nil
	}
	return json.Unmarshal(data, e)
}

// decodeEventFast decodes data into e when it is a JSON object made only of Event's keys (as
// json.Marshal spells them) with values of their fields' types. It reports false, with e in any
// state, for anything else.
func decodeEventFast(data []byte, e *Event) bool {
	d := eventDecoder{b: data}
	if !d.object(func(key []byte) bool {
		switch string(key) {
		case "seq":
			return d.int(&e.Seq)
		case "kind":
			return d.string((*string)(&e.Kind))
		case "turn":
			return d.int(&e.Turn)
		case "step":
			return d.int(&e.Step)
		case "trigger":
			return d.string(&e.Trigger)
		case "source":
			return d.string(&e.Source)
		case "content":
			return d.string(&e.Content)
		case "reasoning":
			return d.string(&e.Reasoning)
		case "usage":
			return d.object(func(key []byte) bool {
				switch string(key) {
				case "prompt_tokens":
					return d.int(&e.Usage.PromptTokens)
				case "completion_tokens":
					return d.int(&e.Usage.CompletionTokens)
				case "total_tokens":
					return d.int(&e.Usage.TotalTokens)
				}
				return false
			})
		case "call_id":
			return d.string(&e.CallID)
		case "tool":
			return d.string(&e.Tool)
		case "arguments":
			return d.string(&e.Arguments)
		case "is_error":
			return d.bool(&e.IsError)
		case "code":
			return d.string((*string)(&e.Code))
		case "reason":
			return d.string((*string)(&e.Reason))
		case "error":
			return d.string(&e.Error)
		}
		return false
	}) {
		return false
	}
	d.space()
	return d.i == len(d.b)
}

// eventDecoder reads the JSON of an event; each method reports false at anything it does not
// read exactly as encoding/json would.
type eventDecoder struct {
	b []byte
	i int
}

func (d *eventDecoder) space() {
	// What json.Marshal writes has no whitespace: one comparison, and no store, for that case.
	if d.i < len(d.b) && d.b[d.i] <= ' ' {
		d.i = jsonwire.SkipWhitespace(d.b, d.i)
	}
}

// object reads an object, calling member with each key (unescaped keys only) once the decoder
// stands on the key's value.
func (d *eventDecoder) object(member func(key []byte) bool) bool {
	d.space()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return false
	}
	d.i++
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return true
	}
	for {
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return false
		}
		start := d.i + 1
		end := start
		for end < len(d.b) && d.b[end] != '"' && d.b[end] != '\\' {
			end++
		}
		if end >= len(d.b) || d.b[end] != '"' {
			return false
		}
		d.i = end + 1
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return false
		}
		d.i++
		d.space()
		if !member(d.b[start:end]) {
			return false
		}
		d.space()
		if d.i >= len(d.b) {
			return false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
			d.space()
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// int reads an integer that fits an int, without fraction or exponent. Small enough to be
// inlined: when it reports false, v and d are left in any state.
func (d *eventDecoder) int(v *int) (ok bool) {
	*v, d.i, ok = jsonwire.ReadInt(d.b, d.i)
	return ok
}

func (d *eventDecoder) bool(v *bool) bool {
	rest := d.b[d.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		*v = true
		d.i += 4
	case len(rest) >= 5 && string(rest[:5]) == "false":
		*v = false
		d.i += 5
	default:
		return false
	}
	return true
}

// string reads a string value the way encoding/json unquotes it: escapes resolved, invalid
// UTF-8 and unpaired surrogates turned into U+FFFD.
func (d *eventDecoder) string(v *string) bool {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return false
	}
	start := d.i + 1
	i := jsonwire.SkipPlain(d.b, start)
	if i < len(d.b) && d.b[i] == '"' {
		*v = intern(d.b[start:i])
		d.i = i + 1
		return true
	}
	s, end, ok := jsonwire.UnquoteRest(d.b, d.i, i)
	*v, d.i = s, end
	return ok
}

// intern returns the string of b, without allocating when it is a value events repeat.
func intern(b []byte) string {
	switch string(b) {
	case "":
		return ""
	case string(KindTurnStart):
		return string(KindTurnStart)
	case string(KindUserMessage):
		return string(KindUserMessage)
	case string(KindStepStart):
		return string(KindStepStart)
	case string(KindAssistantChunk):
		return string(KindAssistantChunk)
	case string(KindAssistantMessage):
		return string(KindAssistantMessage)
	case string(KindToolCall):
		return string(KindToolCall)
	case string(KindToolResult):
		return string(KindToolResult)
	case string(KindStepEnd):
		return string(KindStepEnd)
	case string(KindTurnEnd):
		return string(KindTurnEnd)
	case string(TurnCompleted):
		return string(TurnCompleted)
	case string(TurnMaxTokens):
		return string(TurnMaxTokens)
	case string(TurnAborted):
		return string(TurnAborted)
	case string(TurnError):
		return string(TurnError)
	case string(TurnDisposed):
		return string(TurnDisposed)
	case string(TurnInterrupted):
		return string(TurnInterrupted)
	case string(TurnRejected):
		return string(TurnRejected)
	case string(CodeInvalidArgs):
		return string(CodeInvalidArgs)
	case string(CodeDenied):
		return string(CodeDenied)
	case string(CodeFailed):
		return string(CodeFailed)
	case "user":
		return "user"
	case "nudge":
		return "nudge"
	case "resume":
		return "resume"
	case "clarification":
		return "clarification"
	}
	return string(b)
}
