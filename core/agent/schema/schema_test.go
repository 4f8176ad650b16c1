package schema_test

import (
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent/schema"
)

func mustParse(t *testing.T, raw string) any {
	t.Helper()
	v, err := schema.Parse([]byte(raw))
	if err != nil {
		t.Fatalf("parse %s: %v", raw, err)
	}
	return v
}

func TestParseRejectsMalformedInput(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"whitespace only", "  \n"},
		{"truncated object", `{"type":`},
		{"trailing value", `{} {}`},
		{"trailing garbage", `{} x`},
		{"stray closing bracket", `{}]`},
		{"stray closing brace", `"a" }`},
		{"single quotes", `{'type':'object'}`},
		{"trailing comma", `{"a":1,}`},
		{"bare word", `object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := schema.Parse([]byte(tc.in)); err == nil {
				t.Fatalf("Parse(%q) accepted malformed input", tc.in)
			}
		})
	}
}

func TestParseKeepsNumbersExact(t *testing.T) {
	v := mustParse(t, ` {"n": 9007199254740993} `)
	if got := v.(map[string]any)["n"]; got.(interface{ String() string }).String() != "9007199254740993" {
		t.Fatalf("number changed: %v", got)
	}
}

func TestCheckSupportedKeywordRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema string
		want   []string // every violation, in order; nil means supported
	}{
		{"minimal object", `{"type":"object"}`, nil},
		{"full supported subset", `{"type":"object","title":"t","description":"d","default":{},"examples":[1,{"a":[]}],
			"properties":{"a":{"type":"array","items":{"type":"string","enum":["x","y"]}},"b":{"type":"integer","const":3},
			"c":{"type":"null"},"d":{"type":"boolean"},"e":{"type":"number"},"f":{"type":"object","additionalProperties":true}},
			"required":["a","b"],"additionalProperties":false}`, nil},
		{"root not an object value", `[1]`, []string{"schema must be an object"}},
		{"root string value", `"object"`, []string{"schema must be an object"}},
		{"root type missing", `{}`, []string{`schema.type must be "object" at the root`}},
		{"root type array", `{"type":"array"}`, []string{`schema.type must be "object" at the root`}},
		{"type array not supported", `{"type":"object","properties":{"x":{"type":["string","null"]}}}`,
			[]string{"schema.properties.x.type must be a single type name (type arrays are not supported)"}},
		{"unknown type", `{"type":"object","properties":{"x":{"type":"text"}}}`,
			[]string{`schema.properties.x.type has unknown type "text"`}},
		{"unsupported keywords each reported", `{"type":"object","properties":{"x":{"type":"string","pattern":"a+","minLength":1}},"oneOf":[],"$ref":"#"}`,
			[]string{"schema.$ref is not supported", "schema.oneOf is not supported",
				"schema.properties.x.minLength is not supported", "schema.properties.x.pattern is not supported"}},
		{"anyOf and minimum", `{"type":"object","properties":{"n":{"type":"number","minimum":0}},"anyOf":[{}]}`,
			[]string{"schema.anyOf is not supported", "schema.properties.n.minimum is not supported"}},
		{"description must be a string", `{"type":"object","description":1,"title":false}`,
			[]string{"schema.description must be a string", "schema.title must be a string"}},
		{"properties only on objects", `{"type":"object","properties":{"s":{"type":"string","properties":{}}}}`,
			[]string{"schema.properties.s.properties is only allowed on objects"}},
		{"properties must be an object", `{"type":"object","properties":[]}`, []string{"schema.properties must be an object"}},
		{"property must be a schema", `{"type":"object","properties":{"x":true}}`, []string{"schema.properties.x must be a schema object"}},
		{"required only on objects", `{"type":"object","properties":{"a":{"type":"array","required":[]}}}`,
			[]string{"schema.properties.a.required is only allowed on objects"}},
		{"required must be an array", `{"type":"object","required":"a"}`, []string{"schema.required must be an array of property names"}},
		{"required names must exist", `{"type":"object","properties":{"a":{}},"required":["a","b",3]}`,
			[]string{`schema.required[1] names "b", which is not in properties`, "schema.required[2] must be a string"}},
		{"additionalProperties boolean only", `{"type":"object","additionalProperties":{"type":"string"}}`,
			[]string{"schema.additionalProperties must be a boolean"}},
		{"additionalProperties only on objects", `{"type":"object","properties":{"s":{"type":"string","additionalProperties":false}}}`,
			[]string{"schema.properties.s.additionalProperties is only allowed on objects"}},
		{"items only on arrays", `{"type":"object","properties":{"s":{"type":"string","items":{}}}}`,
			[]string{"schema.properties.s.items is only allowed on arrays"}},
		{"items must be a schema", `{"type":"object","properties":{"a":{"type":"array","items":[{}]}}}`,
			[]string{"schema.properties.a.items must be a schema object"}},
		{"nested items path", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"array","items":{"type":"tuple"}}}}}`,
			[]string{`schema.properties.a.items.items.type has unknown type "tuple"`}},
		{"enum only on scalars", `{"type":"object","enum":[1]}`, []string{"schema.enum is only allowed on scalar types"}},
		{"enum must be non-empty", `{"type":"object","properties":{"e":{"type":"string","enum":[]}}}`,
			[]string{"schema.properties.e.enum must be a non-empty array"}},
		{"enum must be an array", `{"type":"object","properties":{"e":{"enum":"a"}}}`,
			[]string{"schema.properties.e.enum must be a non-empty array"}},
		{"enum members scalar", `{"type":"object","properties":{"e":{"enum":["a",{},[1],null,2.5,true]}}}`,
			[]string{"schema.properties.e.enum[1] must be a scalar", "schema.properties.e.enum[2] must be a scalar"}},
		{"const only on scalars", `{"type":"object","properties":{"a":{"type":"array","const":1}}}`,
			[]string{"schema.properties.a.const is only allowed on scalar types"}},
		{"const must be scalar", `{"type":"object","properties":{"c":{"const":{"a":1}}}}`,
			[]string{"schema.properties.c.const must be a scalar"}},
		{"every violation at once", `{"type":"string","allOf":[],"properties":{"x":{"type":"int"}}}`,
			[]string{`schema.type must be "object" at the root`, "schema.allOf is not supported",
				"schema.properties is only allowed on objects", `schema.properties.x.type has unknown type "int"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := schema.CheckSupported(mustParse(t, tc.schema))
			if len(got) != len(tc.want) {
				t.Fatalf("violations = %q, want %q", schema.Join(got), strings.Join(tc.want, "; "))
			}
			for i := range got {
				if got[i].String() != tc.want[i] {
					t.Errorf("violation %d = %q, want %q", i, got[i].String(), tc.want[i])
				}
			}
		})
	}
}

func TestCheckSupportedCircularRejectedReuseAllowed(t *testing.T) {
	shared := map[string]any{"type": "string"}
	reuse := map[string]any{"type": "object", "properties": map[string]any{"a": shared, "b": shared}}
	if vs := schema.CheckSupported(reuse); len(vs) != 0 {
		t.Fatalf("a subschema reused side by side was rejected: %s", schema.Join(vs))
	}

	loop := map[string]any{"type": "object"}
	loop["properties"] = map[string]any{"self": loop}
	vs := schema.CheckSupported(loop)
	if schema.Join(vs) != "schema.properties.self is circular" {
		t.Fatalf("circular schema: got %q", schema.Join(vs))
	}

	items := map[string]any{"type": "array"}
	items["items"] = items
	root := map[string]any{"type": "object", "properties": map[string]any{"list": items}}
	if got := schema.Join(schema.CheckSupported(root)); got != "schema.properties.list.items is circular" {
		t.Fatalf("circular items: got %q", got)
	}
}

func TestCheckSupportedDeepNestingBounded(t *testing.T) {
	raw := `{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"array","items":`, 2000) + `{}` +
		strings.Repeat(`}`, 2000) + `}}`
	vs := schema.CheckSupported(mustParse(t, raw))
	if len(vs) != 1 || !strings.HasSuffix(vs[0].Message, "nested too deeply") {
		t.Fatalf("deep schema: got %d violations, first %v", len(vs), vs)
	}
}

func TestValidateRulesAndPaths(t *testing.T) {
	const s = `{"type":"object","properties":{
		"name":{"type":"string"},
		"count":{"type":"integer"},
		"ratio":{"type":"number"},
		"ok":{"type":"boolean"},
		"nothing":{"type":"null"},
		"kind":{"type":"string","enum":["a","b"]},
		"version":{"const":2},
		"tags":{"type":"array","items":{"type":"object","properties":{"b":{"type":"string"}},"required":["b"]}},
		"closed":{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false},
		"open":{"type":"object","properties":{}}
	},"required":["name","count"]}`
	tree := mustParse(t, s)
	for _, tc := range []struct {
		name  string
		value string
		want  []string
	}{
		{"valid", `{"name":"n","count":3,"ratio":1.5,"ok":true,"nothing":null,"kind":"a","version":2,
			"tags":[{"b":"x"}],"closed":{"x":"y"},"open":{"anything":1}}`, nil},
		{"not an object", `[1]`, []string{"value must be object"}},
		{"missing required", `{}`, []string{"value.name is required", "value.count is required"}},
		{"wrong types", `{"name":1,"count":"3","ratio":"x","ok":"true","nothing":0}`,
			[]string{"value.count must be integer", "value.name must be string", "value.nothing must be null",
				"value.ok must be boolean", "value.ratio must be number"}},
		{"integer must be whole", `{"name":"n","count":1.5}`, []string{"value.count must be integer"}},
		{"integer written with a fraction of zero", `{"name":"n","count":2.0}`, nil},
		{"huge integer", `{"name":"n","count":123456789012345678901234567890}`, nil},
		{"number out of range is not finite", `{"name":"n","count":1,"ratio":1e400}`, []string{"value.ratio must be number"}},
		{"enum", `{"name":"n","count":1,"kind":"c"}`, []string{`value.kind must be one of ["a","b"]`}},
		{"const", `{"name":"n","count":1,"version":3}`, []string{"value.version must be 2"}},
		{"const equal as a number", `{"name":"n","count":1,"version":2.0}`, nil},
		{"array item paths", `{"name":"n","count":1,"tags":[{"b":"x"},{},{"b":3}]}`,
			[]string{"value.tags[1].b is required", "value.tags[2].b must be string"}},
		{"undeclared property", `{"name":"n","count":1,"closed":{"x":"y","z":1,"w":2}}`,
			[]string{"value.closed.w is not allowed", "value.closed.z is not allowed"}},
		{"undeclared allowed when open", `{"name":"n","count":1,"extra":true}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := schema.Validate(tree, mustParse(t, tc.value))
			if len(got) != len(tc.want) {
				t.Fatalf("violations = %q, want %q", schema.Join(got), strings.Join(tc.want, "; "))
			}
			for i := range got {
				if got[i].String() != tc.want[i] {
					t.Errorf("violation %d = %q, want %q", i, got[i].String(), tc.want[i])
				}
			}
		})
	}
}

func TestValidateJSONTreatsInvalidJSONAsString(t *testing.T) {
	obj := mustParse(t, `{"type":"object"}`)
	str := mustParse(t, `{"type":"object","properties":{"s":{"type":"string"}}}`)
	for _, tc := range []struct {
		name, raw string
		tree      any
		want      string
	}{
		{"invalid JSON against object", `{"a":`, obj, "value must be object"},
		{"plain text against object", `hello`, obj, "value must be object"},
		{"empty input", ``, obj, "value must be object"},
		{"valid object", `{"s":"x"}`, str, ""},
		{"valid JSON wrong inner type", `{"s":1}`, str, "value.s must be string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := schema.Join(schema.ValidateJSON(tc.tree, []byte(tc.raw))); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateDeepValueBounded(t *testing.T) {
	tree := mustParse(t, `{"type":"object"}`)
	items := map[string]any{"type": "array"}
	items["items"] = items // a looping schema must not loop validation
	value := any([]any{})
	for range 1000 {
		value = []any{value}
	}
	vs := schema.Validate(items, value)
	if len(vs) != 1 || !strings.HasSuffix(vs[0].Message, "nested too deeply") {
		t.Fatalf("got %v", vs)
	}
	if vs := schema.Validate(tree, map[string]any{}); len(vs) != 0 {
		t.Fatalf("empty object: %v", vs)
	}
}

func TestJoin(t *testing.T) {
	vs := []schema.Violation{{Path: "value.a", Message: "is required"}, {Path: "value.b", Message: "must be string"}}
	if got := schema.Join(vs); got != "value.a is required; value.b must be string" {
		t.Fatalf("Join = %q", got)
	}
	if schema.Join(nil) != "" {
		t.Fatal("Join(nil) not empty")
	}
}
