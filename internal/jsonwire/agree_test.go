package jsonwire

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestSameAsUnmarshal(t *testing.T) {
	type pair struct {
		A int `json:"a"`
	}
	right := func(b []byte) (pair, error) {
		var p pair
		err := json.Unmarshal(b, &p)
		return p, err
	}
	off := func(b []byte) (pair, error) { p, err := right(b); p.A++; return p, err }
	never := func([]byte) (pair, error) { return pair{}, errors.New("no") }
	for _, tc := range []struct {
		data   string
		decode func([]byte) (pair, error)
		agree  bool
	}{
		{`{"a":1}`, right, true},
		{`{"a":`, right, true},
		{`{"a":`, never, true},
		{`{"a":1}`, off, false},
		{`{"a":1}`, never, false},
	} {
		if err := SameAsUnmarshal([]byte(tc.data), tc.decode); (err == nil) != tc.agree {
			t.Errorf("%s: SameAsUnmarshal = %v, want agreement %v", tc.data, err, tc.agree)
		}
	}
}
