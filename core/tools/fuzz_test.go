package tools

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzCallToolResult feeds arbitrary JSON as a server's tools/call result through the SDK's
// decoding and the conversion the model reads: it never panics, the text is valid UTF-8 when
// the input was, and it stays within the cap plus its note.
func FuzzCallToolResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}],"isError":true}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///a","blob":"aGk="}}],"structuredContent":{"a":[1,2]}}`,
		`{"content":[{"type":"resource_link","uri":"x","name":"n"}],"structuredContent":7}`,
		`{"content":null}`, `{}`, `[]`, `{"content":[{"type":"audio","data":"","mimeType":""}]}`,
	} {
		f.Add([]byte(s), 64)
	}
	f.Fuzz(func(t *testing.T, raw []byte, max int) {
		if max < 1 || max > 1<<16 {
			max = 64
		}
		var res mcp.CallToolResult
		if json.Unmarshal(raw, &res) != nil {
			return
		}
		out := toResult(&res, max)
		if utf8.Valid(raw) && !utf8.ValidString(out.Content) {
			t.Errorf("invalid UTF-8 out of valid input: %q", out.Content)
		}
		if n := len(strings.TrimPrefix(out.Content, "Error: ")); n > max+100 {
			t.Errorf("result of %d bytes past the cap %d", n, max)
		}
		if out.IsError != res.IsError {
			t.Errorf("isError %v became %v", res.IsError, out.IsError)
		}
	})
}

// FuzzToolArguments feeds arbitrary schemas and arguments through the checks: never a panic, and
// arguments that pass are a JSON object.
func FuzzToolArguments(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"number"}},"required":["a"]}`, `{"a":1}`)
	f.Add(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"m":{"type":"string","minLength":2}}}`, `{"m":"x"}`)
	f.Add(`{"type":"object","$ref":"#/definitions/x"}`, `{}`)
	f.Add(`{"type":"object"}`, `[1,2]`)
	f.Add(`{"type":"object","additionalProperties":false}`, `{"b":null}`)
	f.Fuzz(func(t *testing.T, schema, args string) {
		sch, res, err := checkSchema(json.RawMessage(schema))
		if err != nil {
			return
		}
		if !json.Valid(sch) {
			t.Fatalf("the schema sent is not JSON: %s", sch)
		}
		o := &offered{Name: "s__t", resolved: res}
		obj, err := o.checkArgs(json.RawMessage(args))
		if err == nil && obj == nil {
			t.Errorf("arguments %q passed but are not an object", args)
		}
		_ = DisplayArgs(json.RawMessage(args), 200)
	})
}
