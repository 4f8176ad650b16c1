package jsonwire

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestSkipWhitespace(t *testing.T) {
	for _, tc := range []struct {
		in       string
		from, to int
	}{
		{"", 0, 0}, {"x", 0, 0}, {" \t\r\nx ", 0, 4}, {"  ", 0, 2}, {"x  y", 1, 3}, {"x ", 2, 2},
		{"\v", 0, 0}, {"\f", 0, 0}, {"\u00a0", 0, 0},
	} {
		if got := SkipWhitespace([]byte(tc.in), tc.from); got != tc.to {
			t.Errorf("SkipWhitespace(%q, %d) = %d, want %d", tc.in, tc.from, got, tc.to)
		}
	}
}

func TestSkipNumber(t *testing.T) {
	for _, tc := range []struct {
		in  string
		end int
		ok  bool
	}{
		{"0", 1, true},
		{"-0", 2, true},
		{"123,", 3, true},
		{"-1.5e+3]", 7, true},
		{"1E-2", 4, true},
		{"2e10", 4, true},
		{"01", 1, true},
		{"0.0.1", 3, true},
		{"1.5x", 3, true},
		{"9007199254740993", 16, true},
		{"", 0, false},
		{"-", 1, false},
		{"-x", 1, false},
		{"+1", 0, false},
		{".5", 0, false},
		{"1.", 2, false},
		{"1.e3", 2, false},
		{"1e", 2, false},
		{"1e+", 3, false},
		{"-.5", 1, false},
	} {
		if end, ok := skipNumber([]byte(tc.in), 0); end != tc.end || ok != tc.ok {
			t.Errorf("skipNumber(%q, 0) = %d, %v; want %d, %v", tc.in, end, ok, tc.end, tc.ok)
		}
		if end, ok := skipNumber([]byte(":"+tc.in), 1); end != tc.end+1 || ok != tc.ok {
			t.Errorf("skipNumber(%q, 1) = %d, %v; want %d, %v", ":"+tc.in, end, ok, tc.end+1, tc.ok)
		}
		checkNumber(t, []byte(tc.in))
	}
}

func TestReadInt(t *testing.T) {
	for _, tc := range []struct {
		in     string
		v, end int
		ok     bool
	}{
		{"0", 0, 1, true},
		{"-0", 0, 2, true},
		{"42,", 42, 2, true},
		{"-7}", -7, 2, true},
		{"01", 0, 1, true}, // the number is 0; what follows is the caller's
		{strconv.Itoa(math.MaxInt), math.MaxInt, len(strconv.Itoa(math.MaxInt)), true},
		{strconv.Itoa(math.MinInt), math.MinInt, len(strconv.Itoa(math.MinInt)), true},
		{"9223372036854775808", 0, 0, false},
		{"-9223372036854775809", 0, 0, false},
		{"99999999999999999999999", 0, 0, false},
		{"1.0", 0, 0, false},
		{"1e3", 0, 0, false},
		{"1E3", 0, 0, false},
		{"", 0, 0, false},
		{"-", 0, 0, false},
		{"+1", 0, 0, false},
		{"null", 0, 0, false},
		{`"1"`, 0, 0, false},
	} {
		v, end, ok := ReadInt([]byte(":"+tc.in), 1)
		if ok != tc.ok || ok && (v != tc.v || end != tc.end+1) {
			t.Errorf("ReadInt(%q, 1) = %d, %d, %v; want %d, %d, %v", ":"+tc.in, v, end, ok, tc.v, tc.end+1, tc.ok)
		}
		checkInt(t, []byte(tc.in))
	}
}

func TestSkipValueIsJSONValid(t *testing.T) {
	for _, in := range []string{
		`{"a":[1,-2.5e+3,0,true,false,null,"s"],"b":{}}`, ` { "o" : { } , "a" : [ ] } `, `"\u00e9\ud83d"`,
		"\"\xff\"", `[1,2]x`, `{"a":1}{}`, `"abc`, `"\x"`, "\"a\nb\"", `{"a" 1}`, `{1:2}`, `[1,]`, `[1 2]`,
		`{"a":1,}`, `tru`, `nullx`, `-`, `01`, `1.`, `[`, `]`, `{`, ``, ` `, "\xef\xbb\xbf{}", `[{"a":[{}]}]`,
	} {
		checkValue(t, []byte(in))
	}
}

func TestSkipValueNestingLimit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		doc      string
		maxDepth int
		ok       bool
	}{
		{"arrays at the limit", strings.Repeat("[", 5) + strings.Repeat("]", 5), 5, true},
		{"arrays past the limit", strings.Repeat("[", 6) + strings.Repeat("]", 6), 5, false},
		{"objects at the limit", strings.Repeat(`{"a":`, 5) + "1" + strings.Repeat("}", 5), 5, true},
		{"objects past the limit", strings.Repeat(`{"a":`, 6) + "1" + strings.Repeat("}", 6), 5, false},
		{"a scalar needs no level", `1`, 0, true},
		{"an empty array needs one", `[]`, 0, false},
		{"json.Valid's limit", strings.Repeat("[", 10000) + strings.Repeat("]", 10000), 10000, true},
		{"past json.Valid's limit", strings.Repeat("[", 10001) + strings.Repeat("]", 10001), 10000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if end, ok := SkipValue([]byte(tc.doc), 0, tc.maxDepth); ok != tc.ok || ok && end != len(tc.doc) {
				t.Fatalf("SkipValue(%d levels) = %d, %v; want ok %v", tc.maxDepth, end, ok, tc.ok)
			}
		})
	}
}

// checkNumber checks skipNumber against json.Valid on b and each of its prefixes: it reads all
// of a prefix (that does not end in whitespace) exactly when the prefix is a valid JSON document
// that is a number, and what it reads of b it reads again of that part alone.
func checkNumber(t *testing.T, b []byte) {
	t.Helper()
	if end, ok := skipNumber(b, 0); ok {
		if end2, ok2 := skipNumber(b[:end], 0); end2 != end || !ok2 {
			t.Fatalf("skipNumber(%q) = %d, but of %q alone it reads %d, %v", b, end, b[:end], end2, ok2)
		}
	}
	for k := 1; k <= len(b) && k <= 512; k++ {
		p := b[:k]
		if SkipWhitespace(p, k-1) == k {
			continue // json.Valid allows whitespace after the number; skipNumber leaves it
		}
		end, ok := skipNumber(p, 0)
		want := json.Valid(p) && (p[0] == '-' || p[0] >= '0' && p[0] <= '9')
		if (ok && end == k) != want {
			t.Fatalf("skipNumber(%q) = %d, %v; json.Valid says %v", p, end, ok, json.Valid(p))
		}
	}
}

// checkInt checks ReadInt against json.Unmarshal into an int of the number b starts with.
func checkInt(t *testing.T, b []byte) {
	t.Helper()
	v, end, ok := ReadInt(b, 0)
	num, numOK := skipNumber(b, 0)
	if !numOK {
		if ok {
			t.Fatalf("ReadInt(%q) = %d, %d; skipNumber finds no number", b, v, end)
		}
		return
	}
	var want int
	err := json.Unmarshal(b[:num], &want)
	if ok != (err == nil) || ok && (v != want || end != num) {
		t.Fatalf("ReadInt(%q) = %d, %d, %v; encoding/json reads %q as %d (%v)", b, v, end, ok, b[:num], want, err)
	}
}

// checkValue checks SkipValue against json.Valid: b, less whitespace around it, is valid JSON
// exactly when SkipValue reads all of it, and what SkipValue reads is valid JSON.
func checkValue(t *testing.T, b []byte) {
	t.Helper()
	w := SkipWhitespace(b, 0)
	end, ok := SkipValue(b, w, 10000)
	if ok && !json.Valid(b[w:end]) {
		t.Fatalf("SkipValue(%q) read %q, which json.Valid refuses", b[w:], b[w:end])
	}
	whole := ok && SkipWhitespace(b, end) == len(b)
	if whole != json.Valid(b) {
		t.Fatalf("SkipValue(%q) = %d, %v; json.Valid says %v", b[w:], end, ok, json.Valid(b))
	}
	// A value is self-delimiting but for a number: more bytes after it change nothing.
	if ok && !bytes.ContainsAny(b[w:w+1], "-0123456789") {
		if end2, ok2 := SkipValue(append(b[:end:end], "1]}"...), w, 10000); !ok2 || end2 != end {
			t.Fatalf("SkipValue(%q + more) = %d, %v; want %d, true", b[w:end], end2, ok2, end)
		}
	}
}

// FuzzSkip checks skipNumber, ReadInt and SkipValue against encoding/json on any input.
func FuzzSkip(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,-2.5e+3,0,true,false,null,"s\u00e9"],"b":{}}`, `-12`, `9223372036854775808`, `1.0`, `01`, `1e+`,
		` [ "a,]\"[" , {"b":[1,{"c":"}"}]} , -1.5e3 ,true] `, `[{"a":`, "\"\xff\"", `nul`, `{"a" 1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkNumber(t, b)
		checkInt(t, b)
		checkValue(t, b)
	})
}
