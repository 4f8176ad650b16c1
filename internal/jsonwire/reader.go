package jsonwire

import (
	"bytes"
	"encoding/json"
	"strings"
)

// MaxDepth is how deep arrays and objects may nest in a document, as encoding/json allows.
const MaxDepth = 10000

// Reader is a cursor for a decoder that reads the shapes it expects and gives up on anything
// else, leaving that document to encoding/json: each read that finds something it does not
// take exactly as encoding/json would sets OK false, and later reads do nothing useful. What
// it gives up on, besides malformed JSON: a key that equals a known one only when case is
// ignored (encoding/json would take it), a known key given twice, and a null where the caller
// keeps nulls (Keys.Raw).
type Reader struct {
	b     []byte
	i     int
	ok    bool
	depth int // the objects and arrays the cursor is in
}

// NewReader returns a Reader at the start of b.
func NewReader(b []byte) *Reader { return &Reader{b: b, ok: true} }

// End reports whether only whitespace is left and every read went well.
func (r *Reader) End() bool {
	r.ws()
	return r.ok && r.i == len(r.b)
}

func (r *Reader) ws() { r.i = SkipWhitespace(r.b, r.i) }

// byte reads c after optional whitespace.
func (r *Reader) byte(c byte) bool {
	r.ws()
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// Str reads a string as json.Unmarshal decodes it.
func (r *Reader) Str() string {
	r.ws()
	s, end, ok := Unquote(r.b, r.i)
	if !ok {
		r.ok = false
		return ""
	}
	r.i = end
	return s
}

// Int reads a number json.Unmarshal decodes into an int.
func (r *Reader) Int() int {
	r.ws()
	v, end, ok := ReadInt(r.b, r.i)
	if !ok {
		r.ok = false
		return 0
	}
	r.i = end
	return v
}

// Bool reads true or false.
func (r *Reader) Bool() bool {
	r.ws()
	switch {
	case bytes.HasPrefix(r.b[r.i:], []byte("true")):
		r.i += 4
		return true
	case bytes.HasPrefix(r.b[r.i:], []byte("false")):
		r.i += 5
		return false
	}
	r.ok = false
	return false
}

// Raw reads any value and returns its bytes as they stand (in the input: copy them to keep
// them, as json.RawMessage does).
func (r *Reader) Raw() []byte {
	r.ws()
	end, ok := SkipValue(r.b, r.i, MaxDepth-r.depth)
	if !ok {
		r.ok = false
		return nil
	}
	v := r.b[r.i:end]
	r.i = end
	return v
}

// Skip reads any value and drops it.
func (r *Reader) Skip() { r.Raw() }

// Decode returns what json.Unmarshal makes of data in a T: read by read in one pass when the
// Reader it is given reads data to its end, and by json.Unmarshal where it gives up (which also
// says what is wrong). read must fill only what encoding/json would.
func Decode[T any](data []byte, read func(r *Reader, v *T)) (T, error) {
	var v T
	r := NewReader(data)
	read(r, &v)
	if r.End() {
		return v, nil
	}
	var slow T
	err := json.Unmarshal(data, &slow)
	return slow, err
}

// Keys are the keys of an object that a decoder reads (at most 64).
type Keys struct {
	// Names are the keys read; any other key is skipped, as encoding/json skips it.
	Names []string
	// Raw marks (bit i for Names[i]) the keys read into a json.RawMessage, which keeps a null
	// as the bytes null: a null for one of them gives up. A null for any other known key is
	// taken as its absence — what encoding/json makes of it in a zero value of a string,
	// number, bool, slice, map, pointer or struct.
	Raw uint64
}

// Object reads an object: field is called with a known key's index (in keys.Names) and reads
// its value. A key that equals a known one only when case is ignored gives up, as does a known
// key twice.
func (r *Reader) Object(keys *Keys, field func(k int)) {
	if !r.byte('{') {
		r.ok = false
		return
	}
	r.depth++
	defer func() { r.depth-- }()
	var seen uint64
	if r.byte('}') {
		return
	}
	for r.ok {
		k := r.key(keys.Names)
		if !r.ok || !r.byte(':') {
			r.ok = false
			return
		}
		switch {
		case k == -2, k >= 0 && seen&(1<<k) != 0:
			r.ok = false
			return
		case k >= 0 && r.null():
			if keys.Raw&(1<<k) != 0 {
				r.ok = false
				return
			}
			seen |= 1 << k
		case k >= 0:
			seen |= 1 << k
			field(k)
		default:
			r.Skip()
		}
		if r.byte('}') {
			return
		}
		if !r.byte(',') {
			r.ok = false
		}
	}
}

// null reads a null, if that is what comes next.
func (r *Reader) null() bool {
	r.ws()
	if bytes.HasPrefix(r.b[r.i:], []byte("null")) {
		r.i += 4
		return true
	}
	return false
}

// key reads an object's key and returns its index in keys (see knownKey). A key without escapes
// is compared where it stands, without a copy.
func (r *Reader) key(keys []string) int {
	r.ws()
	if r.i < len(r.b) && r.b[r.i] == '"' {
		if j := SkipPlain(r.b, r.i+1); j < len(r.b) && r.b[j] == '"' {
			raw := r.b[r.i+1 : j]
			r.i = j + 1
			return knownKey(keys, raw)
		}
	}
	return knownKey(keys, []byte(r.Str()))
}

// knownKey is key's index in keys, -1 for a key none of them is, -2 for one that equals a key
// only when case is ignored.
func knownKey(keys []string, key []byte) int {
	for i, k := range keys {
		if string(key) == k {
			return i
		}
	}
	for _, k := range keys {
		if strings.EqualFold(string(key), k) {
			return -2
		}
	}
	return -1
}
