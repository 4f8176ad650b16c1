package conformance

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the JSON type a field takes.
type Kind int

// The kinds. Form bodies carry every value as a string: a string of digits is an Integer there,
// "true"/"false" a Boolean, and an Object or Array may come as its JSON text (Slack's blocks,
// Telegram's reply_markup).
const (
	Any Kind = iota
	String
	Integer
	Boolean
	Object
	Array
	IntOrString // Telegram's chat_id, Discord's nonce
	File        // a multipart file part, or a string naming a file (Telegram's InputFile or file_id)
)

var kindNames = [...]string{"any", "string", "integer", "boolean", "object", "array", "integer or string", "file"}

func (k Kind) String() string { return kindNames[k] }

// Unit is what a length counts.
type Unit int

// The units.
const (
	// Chars counts Unicode code points (Slack's and Discord's "characters").
	Chars Unit = iota
	// Bytes counts UTF-8 bytes (Telegram's callback_data).
	Bytes
	// UTF16 counts UTF-16 code units, the unit of Telegram's entity offsets and text limits.
	UTF16
	// Visible counts the UTF-16 code units of the text left after entities parsing: with a
	// sibling parse_mode of HTML, tags dropped and character references decoded (Telegram's
	// "characters after entities parsing").
	Visible
)

// Field is one value's rule: its type, whether it is required, its length or item count, the
// values it takes, and the shape of what it holds.
type Field struct {
	Name     string
	Kind     Kind
	Required bool
	// Min and Max bound a string's length (in Unit) or an array's item count, when present;
	// Max 0 is no bound. For an Integer they bound the value (MinSet says Min applies).
	Min, Max int
	MinSet   bool
	Unit     Unit
	// Enum lists the values the field takes, in their string form.
	Enum []string
	// Shape is an Object's shape.
	Shape *Shape
	// Elem is the rule for each item of an Array.
	Elem *Field
	// Doc is the URL (and section) of the documentation the rule comes from.
	Doc string
}

// Shape is an object's rules: its fields, and the rules that tie fields together. A shape with a
// Tag is a union: the member named Tag picks the variant that applies, and a tag not in
// Variants breaks the structure rule of the place the object is in (what may nest there).
type Shape struct {
	Name   string
	Doc    string
	Fields []Field
	// Open shapes take fields they do not list; closed ones report them (RuleUnknown).
	Open bool
	// Prefixes are field name prefixes a closed shape takes (Discord's files[n]).
	Prefixes []string
	Tag      string
	Variants map[string]*Shape
	// Rules are the cross-field rules, each reporting through report.
	Rules []Rule
}

// Rule is a rule on a whole object (one of two fields required, fields that exclude each other).
type Rule struct {
	Kind  RuleKind
	Doc   string
	Check func(obj map[string]any, report func(path, detail string))
}

type checker struct {
	platform Platform
	method   string
	out      []Violation
}

func (c *checker) add(kind RuleKind, path, doc, format string, args ...any) {
	c.out = append(c.out, Violation{Platform: c.platform, Method: c.method, Rule: kind, Path: path,
		Detail: fmt.Sprintf(format, args...), Doc: doc})
}

func join(path, name string) string {
	if name == "" {
		return path
	}
	if path == "" {
		return name
	}
	return path + "." + name
}

// field checks v (present) against f at path; parent is the object holding it, if any.
func (c *checker) field(path string, f *Field, v any, parent map[string]any) {
	if v == nil {
		// JSON null: Telegram and Slack treat it as absent; Discord's nullable fields take it.
		return
	}
	switch f.Kind {
	case Any:
	case String:
		s, ok := v.(string)
		if !ok {
			c.add(RuleType, path, f.Doc, "is %s, want a string", jsonType(v))
			return
		}
		c.length(path, f, s, parent)
		c.enum(path, f, s)
	case Integer:
		n, ok := asInt(v)
		if !ok {
			c.add(RuleType, path, f.Doc, "is %s %s, want an integer", jsonType(v), clip(v))
			return
		}
		if (f.MinSet || f.Min != 0) && n < int64(f.Min) {
			c.add(RuleLength, path, f.Doc, "is %d, less than %d", n, f.Min)
		}
		if f.Max != 0 && n > int64(f.Max) {
			c.add(RuleLength, path, f.Doc, "is %d, more than %d", n, f.Max)
		}
		c.enum(path, f, strconv.FormatInt(n, 10))
	case Boolean:
		if _, ok := asBool(v); !ok {
			c.add(RuleType, path, f.Doc, "is %s %s, want a boolean", jsonType(v), clip(v))
		}
	case IntOrString:
		switch v := v.(type) {
		case string:
			c.length(path, f, v, parent)
		case json.Number:
			if _, ok := asInt(v); !ok {
				c.add(RuleType, path, f.Doc, "is %s, want an integer or a string", v)
			}
		default:
			c.add(RuleType, path, f.Doc, "is %s, want an integer or a string", jsonType(v))
		}
	case File:
		switch v.(type) {
		case FilePart, string:
		default:
			c.add(RuleType, path, f.Doc, "is %s, want a file", jsonType(v))
		}
	case Object:
		obj, ok := decoded(v).(map[string]any)
		if !ok {
			c.add(RuleType, path, f.Doc, "is %s, want an object", jsonType(decoded(v)))
			return
		}
		if f.Shape != nil {
			c.object(path, f.Shape, obj)
		}
	case Array:
		arr, ok := decoded(v).([]any)
		if !ok {
			c.add(RuleType, path, f.Doc, "is %s, want an array", jsonType(decoded(v)))
			return
		}
		if len(arr) < f.Min {
			c.add(RuleCount, path, f.Doc, "has %d items, fewer than %d", len(arr), f.Min)
		}
		if f.Max != 0 && len(arr) > f.Max {
			c.add(RuleCount, path, f.Doc, "has %d items, more than %d", len(arr), f.Max)
		}
		if f.Elem != nil {
			for i, item := range arr {
				c.field(fmt.Sprintf("%s[%d]", path, i), f.Elem, item, nil)
			}
		}
	}
}

// object checks obj against shape s (resolving a union by its tag).
func (c *checker) object(path string, s *Shape, obj map[string]any) {
	if s.Tag != "" {
		tag, ok := obj[s.Tag]
		if !ok {
			c.add(RuleRequired, join(path, s.Tag), s.Doc, "missing: %s needs a %s", s.Name, s.Tag)
			return
		}
		key := tagKey(tag)
		v, ok := s.Variants[key]
		if !ok {
			c.add(RuleStructure, join(path, s.Tag), s.Doc, "%s %s cannot be here: %s takes %s",
				s.Tag, clip(tag), s.Name, strings.Join(sortedKeys(s.Variants), ", "))
			return
		}
		s = v
	}
	for i := range s.Fields {
		f := &s.Fields[i]
		v, ok := obj[f.Name]
		if !ok || v == nil {
			if f.Required {
				c.add(RuleRequired, join(path, f.Name), f.Doc, "missing")
			}
			continue
		}
		c.field(join(path, f.Name), f, v, obj)
	}
	if !s.Open {
		for _, k := range sortedKeys(obj) {
			if s.has(k) {
				continue
			}
			c.add(RuleUnknown, join(path, k), s.Doc, "%s does not take %q", s.Name, k)
		}
	}
	for _, r := range s.Rules {
		r.Check(obj, func(p, detail string) { c.add(r.Kind, join(path, p), r.Doc, "%s", detail) })
	}
}

func (s *Shape) has(name string) bool {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return true
		}
	}
	for _, p := range s.Prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func (c *checker) length(path string, f *Field, s string, parent map[string]any) {
	if f.Min == 0 && f.Max == 0 {
		return
	}
	n, unit := measure(s, f.Unit, parent)
	if n < f.Min {
		c.add(RuleLength, path, f.Doc, "is %d %s long, shorter than %d", n, unit, f.Min)
	}
	if f.Max != 0 && n > f.Max {
		c.add(RuleLength, path, f.Doc, "is %d %s long, longer than %d", n, unit, f.Max)
	}
}

func (c *checker) enum(path string, f *Field, s string) {
	if len(f.Enum) > 0 && !slices.Contains(f.Enum, s) {
		c.add(RuleEnum, path, f.Doc, "is %q, not one of %s", s, strings.Join(f.Enum, ", "))
	}
}

// measure returns the length of s in unit u, and the unit's name.
func measure(s string, u Unit, parent map[string]any) (int, string) {
	switch u {
	case Bytes:
		return len(s), "bytes"
	case UTF16:
		return UTF16Len(s), "UTF-16 units"
	case Visible:
		if mode, _ := parent["parse_mode"].(string); mode == "HTML" {
			// HTML the Bot API refuses is measured as it is; the fake refuses it itself.
			if v, err := TelegramHTML(s); err == nil {
				s = v
			}
		}
		return UTF16Len(s), "UTF-16 units after entities parsing"
	default:
		return utf8.RuneCountInString(s), "characters"
	}
}

func decoded(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return v
	}
	out, err := decodeJSON([]byte(t))
	if err != nil {
		return v
	}
	return out
}

func asInt(v any) (int64, bool) {
	switch v := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(string(v), 10, 64)
		return n, err == nil
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func asBool(v any) (bool, bool) {
	switch v := v.(type) {
	case bool:
		return v, true
	case string:
		b, err := strconv.ParseBool(v)
		return b, err == nil
	}
	return false, false
}

func tagKey(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return string(v)
	}
	return fmt.Sprint(v)
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case FilePart:
		return "a file"
	}
	return fmt.Sprintf("%T", v)
}

// clip is v for a message, shortened.
func clip(v any) string {
	s := fmt.Sprintf("%v", v)
	if sv, ok := v.(string); ok {
		s = strconv.Quote(sv)
	}
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// str returns obj[name] as a string ("" when absent or not a string).
func str(obj map[string]any, name string) string {
	s, _ := obj[name].(string)
	return s
}

// present reports whether obj has name, not null.
func present(obj map[string]any, name string) bool {
	v, ok := obj[name]
	return ok && v != nil
}

// items returns obj[name] as an array (decoding a JSON string), nil when it is not one.
func items(obj map[string]any, name string) []any {
	a, _ := decoded(obj[name]).([]any)
	return a
}

// object returns v as an object (decoding a JSON string), nil when it is not one.
func object(v any) map[string]any {
	m, _ := decoded(v).(map[string]any)
	return m
}

// Helpers that make the tables read as the documentation does.

func str0(name string, maxLen int, doc string) Field {
	return Field{Name: name, Kind: String, Max: maxLen, Doc: doc}
}

func reqStr(name string, minLen, maxLen int, doc string) Field {
	return Field{Name: name, Kind: String, Required: true, Min: minLen, Max: maxLen, Doc: doc}
}

func integer(name string, doc string) Field  { return Field{Name: name, Kind: Integer, Doc: doc} }
func boolean(name string, doc string) Field  { return Field{Name: name, Kind: Boolean, Doc: doc} }
func anyField(name string, doc string) Field { return Field{Name: name, Kind: Any, Doc: doc} }

func obj(name string, s *Shape, doc string) Field {
	return Field{Name: name, Kind: Object, Shape: s, Doc: doc}
}

func arr(name string, minItems, maxItems int, elem *Field, doc string) Field {
	if elem != nil && elem.Doc == "" {
		elem.Doc = doc
	}
	return Field{Name: name, Kind: Array, Min: minItems, Max: maxItems, Elem: elem, Doc: doc}
}

func enum(name string, doc string, values ...string) Field {
	return Field{Name: name, Kind: String, Enum: values, Doc: doc}
}

func intEnum(name string, doc string, values ...string) Field {
	return Field{Name: name, Kind: Integer, Enum: values, Doc: doc}
}

func required(f Field) Field { f.Required = true; return f }

func of(s *Shape) *Field { return &Field{Kind: Object, Shape: s, Doc: s.Doc} }

func union(name, tag, doc string, variants ...*Shape) *Shape {
	m := make(map[string]*Shape, len(variants))
	for _, v := range variants {
		m[v.tagValue()] = v
	}
	return &Shape{Name: name, Tag: tag, Doc: doc, Variants: m}
}

// tagValue is the value of a variant's tag field: the single value of its enum.
func (s *Shape) tagValue() string {
	for _, f := range s.Fields {
		if (f.Name == "type") && len(f.Enum) == 1 {
			return f.Enum[0]
		}
	}
	panic("conformance: variant " + s.Name + " has no single-valued type")
}

// oneOf is a rule: at least one of names is present.
func oneOf(doc string, names ...string) Rule {
	return Rule{Kind: RuleRequired, Doc: doc, Check: func(obj map[string]any, report func(string, string)) {
		for _, n := range names {
			if present(obj, n) {
				return
			}
		}
		report("", "needs one of "+strings.Join(names, ", "))
	}}
}

// exclusive is a rule: at most one of names is present.
func exclusive(doc string, names ...string) Rule {
	return Rule{Kind: RuleStructure, Doc: doc, Check: func(obj map[string]any, report func(string, string)) {
		var got []string
		for _, n := range names {
			if present(obj, n) {
				got = append(got, n)
			}
		}
		if len(got) > 1 {
			report("", "takes only one of "+strings.Join(names, ", ")+"; got "+strings.Join(got, ", "))
		}
	}}
}
