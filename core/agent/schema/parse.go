package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// errSyntax is wrapped by every Parse error.
var errSyntax = errors.New("schema: not valid JSON")

// Parse decodes a JSON document into a generic tree, keeping numbers exact: objects become
// map[string]any (a repeated key keeps its last value), arrays []any, strings string, numbers
// json.Number, and true, false and null bool and nil — what encoding/json's Decoder with
// UseNumber builds (invalid UTF-8 and lone surrogates in strings become U+FFFD). The document
// must hold exactly one value, with only whitespace around it.
func Parse(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: the document is empty", errSyntax)
	} else if err != nil {
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	rest := bytes.TrimLeft(raw[dec.InputOffset():], " \t\r\n")
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: trailing data after the JSON value at offset %d", errSyntax, len(raw)-len(rest))
	}
	return v, nil
}
