// Package schema checks JSON Schemas against the subset Switchboard supports and validates JSON
// values against them. The subset is the one SUBAGENT-SPEC.md pins for structured output:
// type, properties, required, additionalProperties (boolean), items, enum, const, and the
// annotations description, title, default and examples.
//
// Both directions report every violation with its path, and neither panics on any input.
package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Violation is one problem found, with the path where it was found
// (`schema.properties.x.type`, `value.a[2].b`).
type Violation struct {
	Path    string
	Message string
}

func (v Violation) String() string { return v.Path + " " + v.Message }

// Join renders violations as "v1; v2" in the order given.
func Join(vs []Violation) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return strings.Join(parts, "; ")
}

var validTypes = map[string]bool{
	"object": true, "array": true, "string": true, "number": true,
	"integer": true, "boolean": true, "null": true,
}

// CheckSupported reports every way the schema strays from the supported subset. The root must
// be `type: object`. A nil or empty result means the schema is supported. It accepts the
// generic tree Parse returns (or any tree of map[string]any, []any and scalars); a tree that
// refers to itself is reported as circular rather than followed.
func CheckSupported(s any) []Violation {
	var c checker
	m, ok := s.(map[string]any)
	if !ok {
		return []Violation{{"schema", "must be an object"}}
	}
	if t, _ := m["type"].(string); t != "object" {
		c.add("schema.type", "must be \"object\" at the root")
	}
	c.check("schema", m, 0)
	return c.out
}

type checker struct {
	out []Violation
	// onPath holds the identities of the schema objects between the root and the one being
	// checked: meeting one again means the tree loops. A subschema reused side by side is fine.
	onPath []uintptr
}

func (c *checker) add(path, msg string) { c.out = append(c.out, Violation{path, msg}) }

// Paths are built only for a violation or a subschema, so checking a supported schema builds
// few strings.
func dot(path, key string) string { return path + "." + key }

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// sortedKeys returns m's keys in order, so violations come out in a stable order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// node is one schema object being checked: where it is, its declared type (typ, when hasType
// and the type is valid) and how deep it lies.
type node struct {
	path    string
	m       map[string]any
	typ     string
	hasType bool
	depth   int
}

func (c *checker) check(path string, m map[string]any, depth int) {
	if !c.enter(path, m, depth) {
		return
	}
	defer c.leave()
	n := node{path: path, m: m, depth: depth}
	n.typ, n.hasType = c.typeOf(path, m)
	for _, k := range sortedKeys(m) {
		c.keyword(n, k, m[k])
	}
}

// enter puts m on the path being checked; false (and a violation) when it lies too deep or is
// already on the path, the tree looping.
func (c *checker) enter(path string, m map[string]any, depth int) bool {
	if depth > maxDepth {
		// Every level lengthens the path, so an unbounded descent costs quadratic memory.
		c.add(path, "is nested too deeply")
		return false
	}
	id := reflect.ValueOf(m).Pointer()
	if slices.Contains(c.onPath, id) {
		c.add(path, "is circular")
		return false
	}
	c.onPath = append(c.onPath, id)
	return true
}

// leave takes the schema object enter put last off the path.
func (c *checker) leave() { c.onPath = c.onPath[:len(c.onPath)-1] }

// typeOf checks m's type keyword; typ is the type when it is one valid name, and hasType says
// whether m has the keyword at all.
func (c *checker) typeOf(path string, m map[string]any) (typ string, hasType bool) {
	raw, ok := m["type"]
	if !ok {
		return "", false
	}
	t, isStr := raw.(string)
	switch {
	case !isStr:
		c.add(dot(path, "type"), "must be a single type name (type arrays are not supported)")
	case !validTypes[t]:
		c.add(dot(path, "type"), fmt.Sprintf("has unknown type %q", t))
	default:
		typ = t
	}
	return typ, true
}

// keyword checks the keyword k of n, whose value is v.
func (c *checker) keyword(n node, k string, v any) {
	switch k {
	case "type", "default", "examples":
	case "description", "title":
		if _, ok := v.(string); !ok {
			c.add(dot(n.path, k), "must be a string")
		}
	case "properties":
		c.onlyOnObjects(n, k)
		c.properties(n, k, v)
	case "required":
		c.onlyOnObjects(n, k)
		c.required(n, k, v)
	case "additionalProperties":
		c.onlyOnObjects(n, k)
		if _, ok := v.(bool); !ok {
			c.add(dot(n.path, k), "must be a boolean")
		}
	case "items":
		if n.hasType && n.typ != "array" {
			c.add(dot(n.path, k), "is only allowed on arrays")
		}
		c.items(n, k, v)
	case "enum":
		c.onlyOnScalars(n, k)
		c.enum(n, k, v)
	case "const":
		c.onlyOnScalars(n, k)
		if !isScalar(v) {
			c.add(dot(n.path, k), "must be a scalar")
		}
	default:
		c.add(dot(n.path, k), "is not supported")
	}
}

// onlyOnObjects reports the object keyword k on a schema of another declared type.
func (c *checker) onlyOnObjects(n node, k string) {
	if n.hasType && n.typ != "object" {
		c.add(dot(n.path, k), "is only allowed on objects")
	}
}

// onlyOnScalars reports the scalar keyword k on an object or array schema.
func (c *checker) onlyOnScalars(n node, k string) {
	if n.typ == "object" || n.typ == "array" {
		c.add(dot(n.path, k), "is only allowed on scalar types")
	}
}

// properties checks every property's schema.
func (c *checker) properties(n node, k string, v any) {
	props, ok := v.(map[string]any)
	if !ok {
		c.add(dot(n.path, k), "must be an object")
		return
	}
	for _, name := range sortedKeys(props) {
		sub, ok := props[name].(map[string]any)
		if !ok {
			c.add(n.path+"."+k+"."+name, "must be a schema object")
			continue
		}
		c.check(n.path+"."+k+"."+name, sub, n.depth+1)
	}
}

// required checks that every required name is a string naming one of the properties.
func (c *checker) required(n node, k string, v any) {
	list, ok := v.([]any)
	if !ok {
		c.add(dot(n.path, k), "must be an array of property names")
		return
	}
	props, _ := n.m["properties"].(map[string]any)
	for i, r := range list {
		name, ok := r.(string)
		if !ok {
			c.add(index(dot(n.path, k), i), "must be a string")
			continue
		}
		if _, ok := props[name]; !ok {
			c.add(index(dot(n.path, k), i), fmt.Sprintf("names %q, which is not in properties", name))
		}
	}
}

// items checks the items' schema.
func (c *checker) items(n node, k string, v any) {
	sub, ok := v.(map[string]any)
	if !ok {
		c.add(dot(n.path, k), "must be a schema object")
		return
	}
	c.check(dot(n.path, k), sub, n.depth+1)
}

// enum checks that the enum is a non-empty list of scalars.
func (c *checker) enum(n node, k string, v any) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		c.add(dot(n.path, k), "must be a non-empty array")
		return
	}
	for i, e := range list {
		if !isScalar(e) {
			c.add(index(dot(n.path, k), i), "must be a scalar")
		}
	}
}

func isScalar(v any) bool {
	switch v.(type) {
	case nil, string, bool, json.Number, float64, int, int64:
		return true
	}
	return false
}

// Validate reports every way value breaks the schema: wrong type, a missing required
// property, an undeclared property under additionalProperties:false, not one of the enum, not
// the const; integers must be whole and numbers finite. Keywords outside the subset are
// ignored here (CheckSupported rejects them). value is a tree as Parse returns it.
func Validate(s any, value any) []Violation {
	var out []Violation
	validate(&out, "value", s, value, 0)
	return out
}

// ValidateJSON parses raw and validates it. Invalid JSON is validated as the raw string
// itself, so against an object schema it reports "must be object".
func ValidateJSON(s any, raw []byte) []Violation {
	v, err := Parse(raw)
	if err != nil {
		v = string(raw)
	}
	return Validate(s, v)
}

const maxDepth = 256

func validate(out *[]Violation, path string, s any, v any, depth int) {
	if depth > maxDepth {
		*out = append(*out, Violation{path, "is nested too deeply"})
		return
	}
	m, ok := s.(map[string]any)
	if !ok {
		return
	}
	if t, ok := m["type"].(string); ok && !hasType(v, t) {
		*out = append(*out, Violation{path, "must be " + t})
		return
	}
	if c, ok := m["const"]; ok && !jsonEqual(c, v) {
		*out = append(*out, Violation{path, "must be " + render(c)})
	}
	if e, ok := m["enum"].([]any); ok {
		found := false
		for _, x := range e {
			if jsonEqual(x, v) {
				found = true
				break
			}
		}
		if !found {
			*out = append(*out, Violation{path, "must be one of " + render(e)})
		}
	}
	switch val := v.(type) {
	case map[string]any:
		props, _ := m["properties"].(map[string]any)
		if req, ok := m["required"].([]any); ok {
			for _, r := range req {
				if name, ok := r.(string); ok {
					if _, present := val[name]; !present {
						*out = append(*out, Violation{path + "." + name, "is required"})
					}
				}
			}
		}
		names := make([]string, 0, len(val))
		for k := range val {
			names = append(names, k)
		}
		slices.Sort(names)
		closed := m["additionalProperties"] == false
		for _, k := range names {
			sub, declared := props[k]
			if !declared {
				if closed {
					*out = append(*out, Violation{path + "." + k, "is not allowed"})
				}
				continue
			}
			validate(out, path+"."+k, sub, val[k], depth+1)
		}
	case []any:
		if items, ok := m["items"]; ok {
			for i, x := range val {
				validate(out, path+"["+strconv.Itoa(i)+"]", items, x, depth+1)
			}
		}
	}
}

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		f, ok := number(v)
		return ok && !math.IsInf(f, 0) && !math.IsNaN(f)
	case "integer":
		if n, ok := v.(json.Number); ok {
			if _, err := n.Int64(); err == nil {
				return true
			}
		}
		f, ok := number(v)
		return ok && !math.IsInf(f, 0) && f == math.Trunc(f)
	}
	return false
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

func jsonEqual(a, b any) bool {
	// Integers beyond 2^53 lose precision as float64: compare them exactly when both fit int64.
	if na, ok := a.(json.Number); ok {
		if nb, ok := b.(json.Number); ok {
			ia, errA := na.Int64()
			ib, errB := nb.Int64()
			if errA == nil && errB == nil {
				return ia == ib
			}
		}
	}
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	}
	return false
}

func render(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
