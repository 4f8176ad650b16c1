package jsonwire

import (
	"encoding/json"
	"strings"
	"testing"
)

// marshalString is json.Marshal's quoting of s, the oracle of AppendQuote.
func marshalString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkQuote(t *testing.T, s string) {
	t.Helper()
	want := marshalString(t, s)
	if got := AppendQuote([]byte("prefix"), s); string(got) != "prefix"+want {
		t.Fatalf("AppendQuote(%q) = %s; json.Marshal writes %s", s, got, want)
	}
	if got := AppendEscaped([]byte("prefix"), s); string(got) != "prefix"+want[1:len(want)-1] {
		t.Fatalf("AppendEscaped(%q) = %s; json.Marshal writes %s", s, got, want)
	}
}

func TestAppendQuoteIsJSONMarshal(t *testing.T) {
	for _, tc := range []struct{ name, s string }{
		{"empty", ""},
		{"plain", "hello, world"},
		{"quote and backslash", `say "hi" \ bye`},
		{"short escapes", "\b\f\n\r\t"},
		{"other control bytes", "\x00\x01\x1f\x7f"},
		{"HTML", "<b>&amp;</b>"},
		{"slash stays", "a/b"},
		{"multibyte", "ünï 日本語 😀"},
		{"line and paragraph separators", "a\u2028b\u2029c\u2027"},
		{"replacement character stays", "\ufffd"},
		{"invalid byte", "a\xffb"},
		{"truncated sequence", "a\xe2\x82"},
		{"encoded surrogate", "\xed\xa0\x80"},
		{"escape at the end", "abc\n"},
		{"long", strings.Repeat("text <&> ", 200)},
	} {
		t.Run(tc.name, func(t *testing.T) { checkQuote(t, tc.s) })
	}
}

// FuzzAppendQuote checks AppendQuote and AppendEscaped against json.Marshal on any string.
func FuzzAppendQuote(f *testing.F) {
	for _, s := range []string{"", "a\nb <&> \u2028 😀", "\xff\x00\x7f\"\\", "\xe2\x82", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(checkQuote)
}
