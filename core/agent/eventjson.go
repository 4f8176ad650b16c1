package agent

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/switchboard-bot/switchboard/core/llm"
)

// AppendEvent appends the JSON of e to dst: exactly the bytes json.Marshal(e) returns (the same
// keys in the same order, the same omissions, the same escapes), written by hand. It exists for
// saving histories, which every answered run does.
func AppendEvent(dst []byte, e *Event) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, int64(e.Seq), 10)
	dst = append(dst, `,"kind":`...)
	dst = appendString(dst, string(e.Kind))
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
	return appendString(append(dst, key...), v)
}

// htmlSafe marks the ASCII bytes json.Marshal writes as they are: all but control characters,
// the quote, the backslash and (escaped for HTML) <, > and &.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = !strings.ContainsRune(`"\<>&`, c)
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendString appends s quoted as json.Marshal quotes it: invalid UTF-8 becomes \ufffd, and
// U+2028 and U+2029 are escaped along with the HTML characters.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(dst, s[start:]...), '"')
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
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
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

// int reads an integer without fraction or exponent that fits an int.
func (d *eventDecoder) int(v *int) bool {
	i := d.i
	neg := i < len(d.b) && d.b[i] == '-'
	if neg {
		i++
	}
	if i >= len(d.b) || d.b[i] < '0' || d.b[i] > '9' {
		return false
	}
	var n uint64
	if d.b[i] == '0' {
		i++
	} else {
		for ; i < len(d.b) && d.b[i] >= '0' && d.b[i] <= '9'; i++ {
			if n > (math.MaxUint64-9)/10 {
				return false
			}
			n = n*10 + uint64(d.b[i]-'0')
		}
	}
	// A fraction or exponent (valid JSON that does not fit an int) is refused by the caller, which
	// wants ',' or '}' next.
	switch {
	case !neg && n <= math.MaxInt:
		*v = int(n)
	case neg && n <= -math.MinInt:
		*v = int(-n)
	default:
		return false
	}
	d.i = i
	return true
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
	i := d.plain(start)
	if i < len(d.b) && d.b[i] == '"' {
		*v = intern(d.b[start:i])
		d.i = i + 1
		return true
	}
	return d.unquote(v, start, i)
}

// unquote finishes a string that needs rewriting; b[start:i] is the plain part already scanned.
func (d *eventDecoder) unquote(v *string, start, i int) bool {
	var s strings.Builder
	s.Grow(d.quoteEnd(i) - start) // escapes only shrink; U+FFFD for a stray byte grows, rarely
	s.Write(d.b[start:i])
	for i < len(d.b) {
		switch c := d.b[i]; {
		case c == '"':
			*v = s.String()
			d.i = i + 1
			return true
		case c < ' ':
			return false
		case c == '\\':
			if i+1 >= len(d.b) {
				return false
			}
			switch e := d.b[i+1]; e {
			case '"', '\\', '/':
				s.WriteByte(e)
			case 'b':
				s.WriteByte('\b')
			case 'f':
				s.WriteByte('\f')
			case 'n':
				s.WriteByte('\n')
			case 'r':
				s.WriteByte('\r')
			case 't':
				s.WriteByte('\t')
			case 'u':
				r := hex4(d.b[i+2:])
				if r < 0 {
					return false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					// A valid pair is one rune; anything else leaves this half as U+FFFD and
					// the next escape, if any, to be read on its own.
					if len(d.b)-i >= 6 && d.b[i] == '\\' && d.b[i+1] == 'u' {
						if r2 := hex4(d.b[i+2:]); r2 >= 0 {
							if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
								s.WriteRune(dec)
								i += 6
								continue
							}
						}
					}
					r = unicode.ReplacementChar
				}
				s.WriteRune(r)
				continue
			default:
				return false
			}
			i += 2
		default:
			// Copy the run of bytes that need no rewriting in one go.
			j := d.plain(i)
			if j == i {
				s.WriteRune(utf8.RuneError) // a byte that is not UTF-8
				i++
				continue
			}
			s.Write(d.b[i:j])
			i = j
		}
	}
	return false
}

// quoteEnd returns where the string that i is in ends: the index of the first quote from i
// that no backslash escapes, or len(b).
func (d *eventDecoder) quoteEnd(i int) int {
	for {
		k := bytes.IndexByte(d.b[i:], '"')
		if k < 0 {
			return len(d.b)
		}
		i += k
		n := 0
		for p := i - 1; p >= 0 && d.b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return i
		}
		i++
	}
}

// plainASCII marks the ASCII bytes a string keeps as they are: all but the quote, the backslash
// and control characters.
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plain returns the end of the run from i of bytes a string keeps as they are: no quote,
// backslash or control character, and only valid UTF-8.
func (d *eventDecoder) plain(i int) int {
	for i < len(d.b) {
		if c := d.b[i]; c < utf8.RuneSelf {
			if !plainASCII[c] {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(d.b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return i
}

// hex4 is the value of the four hex digits b starts with, or -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
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
