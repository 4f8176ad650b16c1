package schema_test

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent/schema"
)

// referenceParse is encoding/json's Decoder with UseNumber reading one value and then finding
// nothing but the end: Parse must accept and refuse what it does (its check for trailing data
// included), into the same tree.
func referenceParse(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var rest any
	if err := dec.Decode(&rest); err != io.EOF {
		return nil, io.ErrUnexpectedEOF
	}
	return v, nil
}

// parseCases are documents whose tree must match encoding/json's, or be rejected when it
// rejects them.
var parseCases = []struct{ name, in string }{
	{"object", `{"type":"object","n":[1,-2.5e+3,0,true,false,null,"s"]}`},
	{"repeated key keeps the last", `{"a":1,"a":{"b":[]}}`},
	{"empty containers", ` { "o" : { } , "a" : [ ] } `},
	{"escapes", `"\" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00"`},
	{"lone high surrogate", `"\uD800x"`},
	{"lone low surrogate", `"\uDC00"`},
	{"high surrogate then non-surrogate escape", `"\uD800\u0041"`},
	{"invalid UTF-8", "\"a\xffb\xc3\""},
	{"encoded surrogate", "\"\xed\xa0\x80\""},
	{"multibyte", `"日本語"`},
	{"top-level number", ` 12 `},
	{"exact big number", `9007199254740993`},
	{"leading zero", `01`},
	{"minus alone", `-`},
	{"dot without digits", `1.`},
	{"exponent without digits", `1e+`},
	{"plus sign", `+1`},
	{"control character in string", "\"a\nb\""},
	{"single-quote escape", `"\'"`},
	{"short unicode escape", `"\u12"`},
	{"bad hex", `"\u12G4"`},
	{"unterminated string", `"abc`},
	{"unterminated escape", `"\`},
	{"missing colon", `{"a" 1}`},
	{"number key", `{1:2}`},
	{"trailing comma in array", `[1,]`},
	{"missing comma", `[1 2]`},
	{"truncated literal", `tru`},
	{"literal with suffix", `nullx`},
	{"BOM", "\xef\xbb\xbf{}"},
	{"empty", ``},
	{"trailing value", `{} {}`},
	{"stray bracket", `{}]`},
}

func TestParseMatchesEncodingJSON(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) { compareParse(t, []byte(tc.in)) })
	}
}

func TestParseNestingLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		depth int
		ok    bool
	}{
		{"at the limit", 10000, true},
		{"past the limit", 10001, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Repeat("[", tc.depth) + strings.Repeat("]", tc.depth)
			if _, err := schema.Parse([]byte(doc)); (err == nil) != tc.ok {
				t.Fatalf("depth %d: err %v", tc.depth, err)
			}
			compareParse(t, []byte(doc))
		})
	}
}

func compareParse(t *testing.T, raw []byte) {
	t.Helper()
	got, err := schema.Parse(raw)
	want, werr := referenceParse(raw)
	if (err == nil) != (werr == nil) {
		t.Fatalf("Parse(%q): err %v, encoding/json err %v", raw, err, werr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse(%q) = %#v, encoding/json %#v", raw, got, want)
	}
}

// FuzzParseMatchesEncodingJSON checks Parse against encoding/json on arbitrary input: the same
// documents are accepted, into the same tree, and a tree Parse builds encodes to a document it
// parses back into that tree.
func FuzzParseMatchesEncodingJSON(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		compareParse(t, raw)
		tree, err := schema.Parse(raw)
		if err != nil {
			return
		}
		enc, err := json.Marshal(tree)
		if err != nil {
			t.Fatalf("Marshal(%#v): %v", tree, err)
		}
		again, err := schema.Parse(enc)
		if err != nil || !reflect.DeepEqual(again, tree) {
			t.Fatalf("Parse(%q) = %#v, %v; want %#v", enc, again, err, tree)
		}
	})
}

// BenchmarkParse parses a tool's parameter schema, as a structured run does once.
//
//	go test -run '^$' -bench Parse -benchmem ./core/agent/schema/
func BenchmarkParse(b *testing.B) {
	doc := []byte(`{"type":"object","properties":{"task":{"type":"string","description":"What the subagent should do, in one or two sentences."},"name":{"type":"string","enum":["researcher","writer","reviewer"]},"max_steps":{"type":"integer","minimum":1,"maximum":20},"sources":{"type":"array","items":{"type":"string","format":"uri"},"maxItems":8}},"required":["task","name"],"additionalProperties":false}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := schema.Parse(doc); err != nil {
			b.Fatal(err)
		}
	}
}
