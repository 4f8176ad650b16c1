package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxNameLen is the longest function name the OpenAI-compatible APIs take.
const maxNameLen = 64

// reserved are names of the lead's own tools: a server tool of that name would be mistaken for
// them, so it is skipped.
var reserved = map[string]bool{"delegate": true, "ask_clarification": true, "structured_output": true}

// offered is one server tool as the model sees it.
type offered struct {
	Name        string // <server>__<tool>, characters outside [A-Za-z0-9_-] replaced by '_'
	Server      string
	Tool        string // the server's own name, used to call it
	Description string
	Schema      json.RawMessage // the input schema sent to the model ($schema removed)
	resolved    *jsonschema.Resolved
	timeout     time.Duration
}

// offerName is the offered name of a server's tool.
func offerName(server, tool string) string {
	b := []byte(server + Separator + tool)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// toOffered checks one listed tool and turns it into its offer, or says why it is skipped.
func toOffered(server string, t *mcp.Tool) (offered, error) {
	if t == nil || strings.TrimSpace(t.Name) == "" {
		return offered{}, fmt.Errorf("a tool without a name")
	}
	if reserved[t.Name] {
		return offered{}, fmt.Errorf("tool %q has the name of one of the lead's own tools", t.Name)
	}
	name := offerName(server, t.Name)
	if len(name) > maxNameLen {
		return offered{}, fmt.Errorf("tool %q: its offered name %s is longer than %d characters", t.Name, name, maxNameLen)
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return offered{}, fmt.Errorf("tool %q: its input schema does not encode: %v", t.Name, err)
	}
	schema, res, err := checkSchema(raw)
	if err != nil {
		return offered{}, fmt.Errorf("tool %q: %v", t.Name, err)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return offered{Name: name, Server: server, Tool: t.Name, Description: desc, Schema: schema, resolved: res}, nil
}

// checkSchema accepts an input schema that is a JSON object of type "object" and resolves for
// validation; it returns the schema to send (without "$schema", which models do not need).
func checkSchema(raw json.RawMessage) (json.RawMessage, *jsonschema.Resolved, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, nil, fmt.Errorf("its input schema is not a JSON object")
	}
	if m["type"] != "object" {
		return nil, nil, fmt.Errorf(`its input schema's type is not "object"`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, fmt.Errorf("its input schema is not a JSON Schema: %v", err)
	}
	res, err := s.Resolve(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("its input schema does not resolve: %v", err)
	}
	delete(m, "$schema")
	out, err := json.Marshal(m)
	if err != nil {
		return nil, nil, fmt.Errorf("its input schema does not encode: %v", err)
	}
	return out, res, nil
}

// maxArgsErrorBytes bounds the validation message the model reads.
const maxArgsErrorBytes = 1000

// checkArgs decodes the model's arguments and checks them against the tool's schema; the error
// is written for the model to correct its call.
func (o *offered) checkArgs(raw json.RawMessage) (map[string]any, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("not valid JSON")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the arguments must be a JSON object")
	}
	if o.resolved != nil {
		if err := o.resolved.Validate(obj); err != nil {
			msg := err.Error()
			if len(msg) > maxArgsErrorBytes {
				msg = cutUTF8(msg, maxArgsErrorBytes) + "…"
			}
			return nil, fmt.Errorf("%s", msg)
		}
	}
	return obj, nil
}
