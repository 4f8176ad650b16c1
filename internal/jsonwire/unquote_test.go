package jsonwire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestUnquoteReadsWhatEncodingJSONReads(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", `""`, ""},
		{"plain", `"hello"`, "hello"},
		{"short escapes", `"\" \\ \/ \b \f \n \r \t"`, "\" \\ / \b \f \n \r \t"},
		{"unicode escape", `"\u00e9\u00E9"`, "éé"},
		{"surrogate pair", `"\ud83d\ude00"`, "😀"},
		{"lone high surrogate", `"\ud83dx"`, "\ufffdx"},
		{"lone high surrogate at the end", `"\ud83d"`, "\ufffd"},
		{"lone low surrogate", `"\ude00"`, "\ufffd"},
		{"reversed pair", `"\ude00\ud83d"`, "\ufffd\ufffd"},
		{"high surrogate then other escape", `"\ud83d\u0041"`, "\ufffdA"},
		{"high surrogate then pair", `"\ud83d\ud83d\ude00"`, "\ufffd😀"},
		{"high surrogate then short escape", `"\ud83d\n"`, "\ufffd\n"},
		{"invalid bytes", "\"a\xff\xfeb\"", "a\ufffd\ufffdb"},
		{"invalid byte after an escape", "\"\\n\xff\"", "\n\ufffd"},
		{"truncated sequence", "\"a\xe2\x82\"", "a\ufffd\ufffd"},
		{"encoded surrogate", "\"\xed\xa0\x80\"", "\ufffd\ufffd\ufffd"},
		{"replacement character", "\"\xef\xbf\xbd\"", "\ufffd"},
		{"multibyte", `"ünï 日本語 😀"`, "ünï 日本語 😀"},
		{"escaped quote before the end", `"a\"b"`, `a"b`},
		{"escaped backslashes before the end", `"a\\\\"`, `a\\`},
		{"long", `"` + strings.Repeat(`line\n`, 500) + `"`, strings.Repeat("line\n", 500)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, around := range [][2]string{{"", ""}, {`{"key":`, `,"next":"x"}`}} {
				b := []byte(around[0] + tc.in + around[1])
				s, end, ok := Unquote(b, len(around[0]))
				if want := len(around[0]) + len(tc.in); !ok || s != tc.want || end != want {
					t.Fatalf("Unquote(%q, %d) = %q, %d, %v; want %q, %d, true", b, len(around[0]), s, end, ok, tc.want, want)
				}
			}
			checkUnquote(t, []byte(tc.in))
		})
	}
}

// TestUnquoteRefusesMalformedStrings: each malformed string is refused, and end points at what
// is wrong.
func TestUnquoteRefusesMalformedStrings(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		at       int
	}{
		{"empty input", ``, 0},
		{"no quote", `abc"`, 0},
		{"leading space", ` "a"`, 0},
		{"unterminated", `"abc`, 4},
		{"unterminated after an escape", `"a\n`, 4},
		{"escaped closing quote", `"a\"`, 4},
		{"backslash at the end", `"a\`, 2},
		{"control character", "\"ab\ncd\"", 3},
		{"control character after an escape", "\"\\t\x00\"", 3},
		{"unknown escape", `"a\x"`, 2},
		{"single-quote escape", `"\'"`, 1},
		{"short unicode escape", `"\u12"`, 1},
		{"unicode escape cut short", `"\u12`, 1},
		{"bad hex", `"ab\u12G4"`, 3},
		{"bad second escape of a pair", `"\ud83d\uZZZZ"`, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, end, ok := Unquote([]byte(tc.in), 0); ok || end != tc.at {
				t.Fatalf("Unquote(%q) = %q, %d, %v; want a refusal at %d", tc.in, s, end, ok, tc.at)
			}
			checkUnquote(t, []byte(tc.in))
		})
	}
}

func TestSkipPlain(t *testing.T) {
	for _, tc := range []struct {
		in       string
		from, to int
	}{
		{``, 0, 0},
		{`abc`, 0, 3},
		{`abc`, 3, 3},
		{`abc"def`, 0, 3},
		{`"abc"`, 1, 4},
		{`ab\n`, 0, 2},
		{"ab\x1fc", 0, 2},
		{"ünï\xffx", 0, 5},
		{"ünï\xffx", 6, 7},
		{"日本\xe2\x82", 0, 6},
		{"\xef\xbf\xbd", 0, 3},
		{"\x7f<&>", 0, 4},
	} {
		if got := SkipPlain([]byte(tc.in), tc.from); got != tc.to {
			t.Errorf("SkipPlain(%q, %d) = %d, want %d", tc.in, tc.from, got, tc.to)
		}
	}
}

// TestUnquoteRestIsUnquote: continuing after SkipPlain reads what Unquote reads.
func TestUnquoteRestIsUnquote(t *testing.T) {
	for _, in := range []string{`"plain"`, `"a\nb"`, "\"a\xffb\"", `"abc`, `"a\x"`, `""`} {
		b := []byte(`[` + in)
		s, end, ok := Unquote(b, 1)
		s2, end2, ok2 := UnquoteRest(b, 1, SkipPlain(b, 2))
		if s != s2 || end != end2 || ok != ok2 {
			t.Errorf("UnquoteRest(%q) = %q, %d, %v; Unquote reads %q, %d, %v", b, s2, end2, ok2, s, end, ok)
		}
	}
}

// checkUnquote checks Unquote(b, 0) against encoding/json: a string it reads is the one
// json.Unmarshal reads from the same bytes, and when it refuses b, no prefix of b is a JSON
// string. It also checks that the plain run SkipPlain finds decodes to itself, and that
// UnquoteRest agrees with Unquote.
func checkUnquote(t *testing.T, b []byte) {
	t.Helper()
	s, end, ok := Unquote(b, 0)
	if ok {
		var want string
		if err := json.Unmarshal(b[:end], &want); err != nil || s != want {
			t.Fatalf("Unquote(%q) = %q, %d; encoding/json reads %q from %q (%v)", b, s, end, want, b[:end], err)
		}
		if end < 2 || b[0] != '"' || b[end-1] != '"' {
			t.Fatalf("Unquote(%q) read %d bytes, not a quoted string", b, end)
		}
	} else {
		if end < 0 || end > len(b) {
			t.Fatalf("Unquote(%q) refused it at %d, outside the input", b, end)
		}
		for k := 1; k <= len(b) && k <= 512; k++ {
			var v string
			if json.Unmarshal(b[:k], &v) == nil && b[0] == '"' {
				t.Fatalf("Unquote(%q) refused it; encoding/json reads %q from %q", b, v, b[:k])
			}
		}
	}
	if len(b) == 0 {
		return
	}
	p := SkipPlain(b, 1)
	plain := b[1:p]
	var v string
	if err := json.Unmarshal([]byte(`"`+string(plain)+`"`), &v); err != nil || v != string(plain) {
		t.Fatalf("SkipPlain(%q, 1) = %d, but encoding/json reads %q as %q (%v)", b, p, plain, v, err)
	}
	if b[0] == '"' {
		if s2, end2, ok2 := UnquoteRest(b, 0, p); s2 != s || end2 != end || ok2 != ok {
			t.Fatalf("UnquoteRest(%q, 0, %d) = %q, %d, %v; Unquote reads %q, %d, %v", b, p, s2, end2, ok2, s, end, ok)
		}
	}
}

// FuzzUnquote checks Unquote against encoding/json on any input.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{
		`"a\nb \u003c\u0026 \ud83d\ude00"`, `"\ud83d\u0041"`, `"\ud83d"`, "\"\xff\xed\xa0\x80\"", `"abc`, `"\`,
		`"\u12G4"`, "\"a\x01\"", `"a"b"`, `"\\"x`, `x`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkUnquote)
}
