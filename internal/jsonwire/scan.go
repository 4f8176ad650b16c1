package jsonwire

import "math"

// SkipWhitespace returns the index of the first byte of b from i on that is not JSON whitespace
// (space, tab, newline, carriage return), or len(b).
func SkipWhitespace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipNumber reads the JSON number at b[i:] as -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// reads it and returns the index after it: a leading zero ends the integer part ("01" is the
// number 0, then 1). When ok is false, there is no number at i and end is where the grammar
// breaks: after the sign, the dot or the exponent that lacks its digits.
func skipNumber(b []byte, i int) (end int, ok bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

// skipDigits returns the index of the first byte of b from i on that is not a decimal digit.
func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// ReadInt reads the JSON number at b[i:] when json.Unmarshal would decode it into an int: v is
// its value and end the index after it. ok is false when there is no number at i, or one that
// has a fraction or an exponent (which json.Unmarshal refuses for an int, 1.0 included) or that
// does not fit an int; v and end are then meaningless.
func ReadInt(b []byte, i int) (v, end int, ok bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	if i >= len(b) || b[i] < '0' || b[i] > '9' {
		return 0, i, false
	}
	var u uint64
	if b[i] == '0' {
		i++
	} else {
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if u > (math.MaxUint64-9)/10 {
				return 0, i, false
			}
			u = u*10 + uint64(b[i]-'0')
		}
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, i, false
	}
	switch {
	case !neg && u <= math.MaxInt:
		return int(u), i, true
	case neg && u <= -math.MinInt:
		return int(-u), i, true
	}
	return 0, i, false
}

// SkipValue reads the JSON value at b[i:] (no whitespace before it) and returns the index after
// it, checking it as json.Valid checks a document: ok is false (and end meaningless) when there
// is no valid value at i or when arrays and objects nest in it more than maxDepth deep (the
// value counts as one level if it is an array or an object; json.Valid allows 10000). Strings
// are checked as JSON's grammar has them, so bytes that are not UTF-8 are valid in them. It
// recurses once a level.
func SkipValue(b []byte, i, maxDepth int) (end int, ok bool) {
	return value(b, i, maxDepth)
}

// value reads the value at b[i:], in which arrays and objects may nest levels deep, and returns
// the index after it.
func value(b []byte, i, levels int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return stringEnd(b, i)
	case c == '{':
		return container(b, i, levels, '}')
	case c == '[':
		return container(b, i, levels, ']')
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, false
}

// container reads the object or array that opens at b[i] (closing is its closing bracket, '}'
// or ']'), in which arrays and objects may nest levels deep.
func container(b []byte, i, levels int, closing byte) (int, bool) {
	if levels < 1 {
		return i, false
	}
	i = SkipWhitespace(b, i+1)
	if i < len(b) && b[i] == closing {
		return i + 1, true
	}
	for {
		var ok bool
		if closing == '}' { // an object's member: a key and a colon before the value
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			if i, ok = stringEnd(b, i); !ok {
				return i, false
			}
			i = SkipWhitespace(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			i = SkipWhitespace(b, i+1)
		}
		if i, ok = value(b, i, levels-1); !ok {
			return i, false
		}
		i = SkipWhitespace(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = SkipWhitespace(b, i+1)
		case closing:
			return i + 1, true
		default:
			return i, false
		}
	}
}

// inString marks the bytes a string may hold as they are: all but the quote, the backslash and
// control characters (the grammar leaves other bytes, even invalid UTF-8, to the decoder).
var inString = func() (t [256]bool) {
	for c := ' '; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// stringEnd reads the string whose opening quote is b[i] and returns the index after its
// closing quote.
func stringEnd(b []byte, i int) (int, bool) {
	i++
	for {
		for _, c := range b[i:] { // ranging, and a 256-entry table: no bounds checks
			if !inString[c] {
				break
			}
			i++
		}
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case '"':
			return i + 1, true
		case '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if u4(b[i:]) < 0 {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		default:
			return i, false // a control character
		}
	}
}

func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}
