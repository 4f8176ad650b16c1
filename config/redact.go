package config

import (
	"bytes"
	"log/slog"
	"net/url"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// RedactedValue is what Redacted prints in place of a secret that is set. An unset secret prints
// as empty, so the output shows which secrets are configured without showing any.
const RedactedValue = "[redacted]"

// Redacted returns the configuration as YAML, every key in struct order, with every secret set
// replaced by "[redacted]" (one per item for auth.signing_keys) and the password in any URL
// masked. The output loads back with Load; it is what `bot check-config` prints.
func (c *Config) Redacted() string {
	if c == nil {
		return ""
	}
	root := &yaml.Node{Kind: yaml.MappingNode}
	sections := map[string]*yaml.Node{"": root}
	for _, l := range schema.ordered {
		parent := sectionNode(sections, l.key)
		name := l.key[strings.LastIndex(l.key, ".")+1:]
		parent.Content = append(parent.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: name},
			valueNode(l, reflect.ValueOf(c).Elem().FieldByIndex(l.index)))
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		// Only plain strings, numbers and bools go in: encoding cannot fail.
		panic("config: encode redacted YAML: " + err.Error())
	}
	_ = enc.Close()
	return b.String()
}

// String returns Redacted, so that printing a *Config by accident (%v, %s) shows no secret.
// A Config printed by value, or a struct holding one, is not covered: pass the pointer.
func (c *Config) String() string { return c.Redacted() }

// GoString returns Redacted, so that %#v of a *Config shows no secret either.
func (c *Config) GoString() string { return c.Redacted() }

// LogValue logs a *Config as its redacted YAML.
func (c *Config) LogValue() slog.Value { return slog.StringValue(c.Redacted()) }

// sectionNode returns the mapping node a key's value goes in, creating its sections in order.
func sectionNode(sections map[string]*yaml.Node, key string) *yaml.Node {
	i := strings.LastIndex(key, ".")
	if i < 0 {
		return sections[""]
	}
	path := key[:i]
	if n, ok := sections[path]; ok {
		return n
	}
	parent := sectionNode(sections, path)
	n := &yaml.Node{Kind: yaml.MappingNode}
	parent.Content = append(parent.Content,
		&yaml.Node{Kind: yaml.ScalarNode, Value: path[strings.LastIndex(path, ".")+1:]}, n)
	sections[path] = n
	return n
}

func valueNode(l *leaf, v reflect.Value) *yaml.Node {
	var out any
	switch {
	case l.typ == durationType:
		out = time.Duration(v.Int()).String()
	case l.key == "tools.servers":
		out = redactedTools(v.Interface().(map[string]ToolServer))
	case l.key == "tools.policy":
		out = policyNode(v.Interface().([]ToolRule))
	case l.key == "llm.providers":
		out = redactedProviders(v.Interface().(map[string]LLMProvider))
	case l.key == "profiles":
		out = profilesNode(v.Interface().(map[string]Profile))
	case l.key == "routes":
		out = routesNode(v.Interface().([]Route))
	case l.secret == secretFull && v.Kind() == reflect.String:
		out = ""
		if v.String() != "" {
			out = RedactedValue
		}
	case l.secret == secretFull && v.Kind() == reflect.Slice:
		items := make([]string, v.Len())
		for i := range items {
			items[i] = RedactedValue
		}
		out = items
	case l.secret == secretURL || (v.Kind() == reflect.String && isURLKey(l.key)):
		out = maskURL(v.String(), l.secret != notSecret)
	case v.Kind() == reflect.Slice && v.IsNil():
		out = []string{}
	default:
		out = v.Interface()
	}
	n := &yaml.Node{}
	if err := n.Encode(out); err != nil {
		panic("config: encode " + l.key + ": " + err.Error())
	}
	return n
}

// maskURL hides the user information of a URL. A URL that does not parse is hidden whole when
// it is a secret or may hold user information, since that cannot be told apart from the rest.
func maskURL(raw string, secret bool) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		if secret || strings.Contains(raw, "@") {
			return RedactedValue
		}
		return raw
	}
	if u.User == nil {
		return raw
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	} else {
		// A lone user name may be the password (redis://secret@host).
		u.User = url.User("xxxxx")
	}
	return u.String()
}

// policyNode is tools.policy as YAML values, in the file's spelling.
func policyNode(rules []ToolRule) []map[string]any {
	out := []map[string]any{}
	for _, r := range rules {
		m := map[string]any{"tools": r.Tools}
		if len(r.Allow) > 0 {
			m["allow"] = r.Allow
		}
		if r.Approval != "" {
			m["approval"] = r.Approval
		}
		out = append(out, m)
	}
	return out
}
