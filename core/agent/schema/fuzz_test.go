package schema_test

import (
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent/schema"
)

// FuzzCheckSupported feeds arbitrary documents to the checker: it must never panic, and an
// accepted schema must have an object root.
func FuzzCheckSupported(f *testing.F) {
	for _, s := range []string{
		`{"type":"object"}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","enum":["x"]}}},"required":["a"]}`,
		`{"type":"object","additionalProperties":false,"properties":{"c":{"const":1}}}`,
		`{"type":["object"]}`, `{"oneOf":[]}`, `[]`, `null`, `"x"`, `{"type":"object","required":[1]}`,
		`{"type":"object","properties":{"e":{"enum":[]}}}`, `{"type":"object","properties":[]}`, `{}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		tree, err := schema.Parse(raw)
		if err != nil {
			return
		}
		vs := schema.CheckSupported(tree)
		if len(vs) == 0 {
			m, ok := tree.(map[string]any)
			if !ok || m["type"] != "object" {
				t.Fatalf("accepted a schema whose root is not type object: %s", raw)
			}
		}
		for _, v := range vs {
			if v.Path == "" || v.Message == "" {
				t.Fatalf("violation without path or message: %+v", v)
			}
		}
	})
}

// FuzzValidate validates arbitrary values (valid JSON or not) against arbitrary schemas: it must
// never panic, and every violation must carry a path rooted at "value".
func FuzzValidate(f *testing.F) {
	for _, c := range [][2]string{
		{`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`, `{"n":1}`},
		{`{"type":"object","properties":{"n":{"type":"number"}}}`, `{"n":1e400}`},
		{`{"type":"object","additionalProperties":false}`, `{"x":[1,{"y":null}]}`},
		{`{"type":"array","items":{"enum":["a",1,null]}}`, `["a",2]`},
		{`{"const":"x"}`, `not json`},
		{`{"type":"object"}`, ``},
		{`[]`, `{}`},
	} {
		f.Add([]byte(c[0]), []byte(c[1]))
	}
	f.Fuzz(func(t *testing.T, rawSchema, rawValue []byte) {
		tree, err := schema.Parse(rawSchema)
		if err != nil {
			return
		}
		for _, v := range schema.ValidateJSON(tree, rawValue) {
			if len(v.Path) < 5 || v.Path[:5] != "value" || v.Message == "" {
				t.Fatalf("bad violation %+v", v)
			}
		}
	})
}
