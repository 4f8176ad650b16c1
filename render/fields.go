package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// maxStructuredValue bounds one structured field's value before rendering.
const maxStructuredValue = 1000

// FieldsFromJSON turns a subagent's structured output into fields for a
// SubagentResult: one field per top-level key of an object, in the order the
// keys appear; strings as they are, other values as compact JSON (cut to 1,000
// characters). A non-object value gives one field labelled "value". Invalid
// JSON is an error.
func FieldsFromJSON(data []byte) ([]Field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("render: structured value: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		var v json.RawMessage
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("render: structured value: %w", err)
		}
		return []Field{{Label: "value", Value: jsonValue(v), Inline: true}}, nil
	}
	var fields []Field
	for dec.More() {
		keyTok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("render: structured value: %w", err)
		}
		key, _ := keyTok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("render: structured value %q: %w", key, err)
		}
		fields = append(fields, Field{Label: key, Value: jsonValue(raw), Inline: true})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("render: structured value: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("render: structured value: trailing data after the object")
	}
	return fields, nil
}

func jsonValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return truncate(s, maxStructuredValue)
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return truncate(b.String(), maxStructuredValue)
	}
	return truncate(strings.TrimSpace(string(raw)), maxStructuredValue)
}
