package telegram

import (
	"bytes"
	"errors"
	"fmt"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/internal/jsonwire"
)

// answer is the envelope of a Bot API answer: {"ok", "result", "error_code", "description",
// "parameters"}, read as json.Unmarshal reads it into the library's tgbotapi.APIResponse (field
// names matched without regard to case, the last of a repeated one winning, unknown ones
// skipped), in one pass and without copying result.
type answer struct {
	ok          bool
	result      []byte // the raw value, a slice of the body; nil when there is none
	code        int
	description string
	params      *tgbotapi.ResponseParameters
}

// errNotAnswer is a body that is not a Bot API answer (not JSON, or fields of the wrong type).
var errNotAnswer = errors.New("the body is not a Bot API answer")

// maxAnswerDepth is how deep arrays and objects may nest in an answer: encoding/json's limit.
const maxAnswerDepth = 10000

// decodeAnswer reads the answer that is the whole of b (whitespace around it allowed).
func decodeAnswer(b []byte) (answer, error) {
	var a answer
	i := jsonwire.SkipWhitespace(b, 0)
	i, err := readObject(b, i, maxAnswerDepth, func(key []byte, i int) (int, error) {
		switch {
		case bytes.EqualFold(key, []byte("ok")):
			return readBool(b, i, &a.ok)
		case bytes.EqualFold(key, []byte("result")):
			end, ok := jsonwire.SkipValue(b, i, maxAnswerDepth-1)
			if !ok {
				return end, fmt.Errorf("%w: result is not JSON", errNotAnswer)
			}
			a.result = b[i:end:end]
			return end, nil
		case bytes.EqualFold(key, []byte("error_code")):
			return readInt(b, i, &a.code)
		case bytes.EqualFold(key, []byte("description")):
			return readString(b, i, &a.description)
		case bytes.EqualFold(key, []byte("parameters")):
			if b[i] == 'n' {
				a.params = nil // null clears the pointer, as encoding/json does
				return readNull(b, i)
			}
			if a.params == nil {
				a.params = &tgbotapi.ResponseParameters{}
			}
			p := a.params
			return readObject(b, i, maxAnswerDepth-1, func(key []byte, i int) (int, error) {
				switch {
				case bytes.EqualFold(key, []byte("migrate_to_chat_id")):
					var v int
					end, err := readInt(b, i, &v)
					if err == nil && b[i] != 'n' {
						p.MigrateToChatID = int64(v)
					}
					return end, err
				case bytes.EqualFold(key, []byte("retry_after")):
					return readInt(b, i, &p.RetryAfter)
				}
				return skipValue(b, i, maxAnswerDepth-2)
			})
		}
		return skipValue(b, i, maxAnswerDepth-1)
	})
	if err != nil {
		return answer{}, err
	}
	if i = jsonwire.SkipWhitespace(b, i); i != len(b) {
		return answer{}, fmt.Errorf("%w: data after the answer", errNotAnswer)
	}
	return a, nil
}

// readObject reads the object at b[i:] (no whitespace before it), in which arrays and objects
// may nest levels deep (the object itself one of them), calling field for each member with its
// unquoted name and the index of its value; field returns the index after the value.
func readObject(b []byte, i, levels int, field func(key []byte, i int) (int, error)) (int, error) {
	if i >= len(b) || b[i] != '{' {
		return i, fmt.Errorf("%w: not an object at byte %d", errNotAnswer, i)
	}
	if levels <= 0 {
		return i, fmt.Errorf("%w: nested too deep", errNotAnswer)
	}
	i = jsonwire.SkipWhitespace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		key, end, err := readKey(b, i)
		if err != nil {
			return end, err
		}
		i = jsonwire.SkipWhitespace(b, end)
		if i >= len(b) || b[i] != ':' {
			return i, fmt.Errorf("%w: no colon after a name at byte %d", errNotAnswer, i)
		}
		i = jsonwire.SkipWhitespace(b, i+1)
		if i >= len(b) {
			return i, fmt.Errorf("%w: cut short", errNotAnswer)
		}
		if i, err = field(key, i); err != nil {
			return i, err
		}
		i = jsonwire.SkipWhitespace(b, i)
		if i >= len(b) {
			return i, fmt.Errorf("%w: cut short", errNotAnswer)
		}
		switch b[i] {
		case ',':
			i = jsonwire.SkipWhitespace(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, fmt.Errorf("%w: unexpected byte at %d", errNotAnswer, i)
		}
	}
}

// readKey reads the member name at b[i:]: its bytes as they are when it has no escapes (no
// copy), else unquoted.
func readKey(b []byte, i int) ([]byte, int, error) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, fmt.Errorf("%w: no member name at byte %d", errNotAnswer, i)
	}
	j := jsonwire.SkipPlain(b, i+1)
	if j < len(b) && b[j] == '"' {
		return b[i+1 : j], j + 1, nil
	}
	s, end, ok := jsonwire.UnquoteRest(b, i, j)
	if !ok {
		return nil, end, fmt.Errorf("%w: bad member name at byte %d", errNotAnswer, i)
	}
	return []byte(s), end, nil
}

// skipValue passes over the valid value at b[i:].
func skipValue(b []byte, i, levels int) (int, error) {
	end, ok := jsonwire.SkipValue(b, i, levels)
	if !ok {
		return end, fmt.Errorf("%w: not JSON at byte %d", errNotAnswer, end)
	}
	return end, nil
}

// readNull reads the null at b[i:].
func readNull(b []byte, i int) (int, error) {
	if bytes.HasPrefix(b[i:], []byte("null")) {
		return i + 4, nil
	}
	return i, fmt.Errorf("%w: not JSON at byte %d", errNotAnswer, i)
}

// readBool reads true or false into v; null leaves v as it is. Another value is an error.
func readBool(b []byte, i int, v *bool) (int, error) {
	switch {
	case bytes.HasPrefix(b[i:], []byte("true")):
		*v = true
		return i + 4, nil
	case bytes.HasPrefix(b[i:], []byte("false")):
		*v = false
		return i + 5, nil
	case b[i] == 'n':
		return readNull(b, i)
	}
	return i, fmt.Errorf("%w: ok is not a boolean", errNotAnswer)
}

// readInt reads an integer that fits an int into v; null leaves v as it is. Another value, a
// fraction or an exponent included, is an error.
func readInt(b []byte, i int, v *int) (int, error) {
	if b[i] == 'n' {
		return readNull(b, i)
	}
	n, end, ok := jsonwire.ReadInt(b, i)
	if !ok {
		return end, fmt.Errorf("%w: a number field is not an integer", errNotAnswer)
	}
	*v = n
	return end, nil
}

// readString reads a string into v; null leaves v as it is. Another value is an error.
func readString(b []byte, i int, v *string) (int, error) {
	if b[i] == 'n' {
		return readNull(b, i)
	}
	s, end, ok := jsonwire.Unquote(b, i)
	if !ok {
		return end, fmt.Errorf("%w: description is not a string", errNotAnswer)
	}
	*v = s
	return end, nil
}
