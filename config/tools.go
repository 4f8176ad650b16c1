package config

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Tools configures the tools agents use from MCP servers (tools.*). Servers and policy are
// structured, so they are set in the YAML file; the scalar keys may come from the environment.
type Tools struct {
	// Servers are the MCP servers by name; a server's tools are offered as <name>__<tool>.
	Servers map[string]ToolServer `koanf:"servers"`
	// Policy rules: the first whose tools glob matches an offered name decides who may use the
	// tool and whether a call waits for approval.
	Policy []ToolRule `koanf:"policy"`
	// Subagents is ToolsInherit, ToolsNone or globs of offered names.
	Subagents []string `koanf:"subagents"`
	// ApprovalTTL is how long an approval card waits for its decision.
	ApprovalTTL time.Duration `koanf:"approval_ttl"`
	// CallTimeout bounds one tool call.
	CallTimeout time.Duration `koanf:"call_timeout"`
	// ConnectTimeout bounds one connection attempt to a server.
	ConnectTimeout time.Duration `koanf:"connect_timeout"`
	// MaxResultBytes is how much of one result the model reads; the rest is cut with a note.
	MaxResultBytes int `koanf:"max_result_bytes"`
	// IdentityKey signs the identity headers sent to HTTP servers (HMAC-SHA256).
	IdentityKey string `koanf:"identity_key" secret:"true"`
}

// ToolServer is one MCP server: Command for a stdio server, URL for a streamable-HTTP one.
type ToolServer struct {
	Command []string          `koanf:"command"`
	Env     map[string]string `koanf:"env"`
	EnvFile map[string]string `koanf:"env_file"`
	Dir     string            `koanf:"dir"`
	URL     string            `koanf:"url"`
	Headers map[string]string `koanf:"headers"`
	// HeadersFile maps a header to a file holding its value (a secret), relative to the
	// configuration file's folder.
	HeadersFile map[string]string `koanf:"headers_file"`
	Include     []string          `koanf:"include"`
	Exclude     []string          `koanf:"exclude"`
	CallTimeout time.Duration     `koanf:"call_timeout"`
}

// ToolRule is one tools.policy rule.
type ToolRule struct {
	Tools    []string `koanf:"tools"`
	Allow    []string `koanf:"allow"`
	Approval string   `koanf:"approval"`
}

// tools.subagents and tools.policy approval values (allow takes everyone, admins or ids).
const (
	ToolsInherit   = "inherit"
	ToolsNone      = "none"
	ApprovalNever  = "never"
	ApprovalAlways = "always"
	ApprovalAdmin  = "admin"
)

var toolServerNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,31}$`)

// checkToolsTree checks the structured tools keys of one layer's tree before they are decoded,
// naming each unknown or mistyped key and never quoting a value (env and headers hold secrets).
func checkToolsTree(key string, v any) []Problem {
	switch key {
	case "tools.servers":
		servers, ok := v.(map[string]any)
		if !ok {
			return []Problem{{Key: key, Message: "expected a mapping of server names to servers, got " + kindOf(v)}}
		}
		var out []Problem
		for _, name := range sortedKeys(servers) {
			out = append(out, checkFields(key+"."+name, servers[name], reflect.TypeFor[ToolServer]())...)
		}
		return out
	case "tools.policy":
		rules, ok := v.([]any)
		if !ok {
			return []Problem{{Key: key, Message: "expected a list of rules, got " + kindOf(v)}}
		}
		var out []Problem
		for i, r := range rules {
			out = append(out, checkFields(fmt.Sprintf("%s[%d]", key, i), r, reflect.TypeFor[ToolRule]())...)
		}
		return out
	}
	return nil
}

// field is one key a structured mapping may hold, and its type.
type field struct {
	name string
	typ  reflect.Type
}

// fieldsOf lists a struct's koanf keys, in struct order.
func fieldsOf(t reflect.Type) []field {
	out := make([]field, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		out = append(out, field{f.Tag.Get("koanf"), f.Type})
	}
	return out
}

// checkFields checks one mapping against a struct's koanf fields.
func checkFields(at string, v any, t reflect.Type) []Problem {
	return checkMapping(at, v, fieldsOf(t))
}

// checkMapping checks one mapping against the keys it may hold, a key whose type is a struct (or
// a pointer to one) as a mapping of that struct's keys. No message quotes a value.
func checkMapping(at string, v any, fields []field) []Problem {
	m, ok := v.(map[string]any)
	if !ok {
		return []Problem{{Key: at, Message: "expected a mapping, got " + kindOf(v)}}
	}
	types := map[string]reflect.Type{}
	var names []string
	for _, f := range fields {
		types[f.name] = f.typ
		names = append(names, f.name)
	}
	var out []Problem
	for _, k := range sortedKeys(m) {
		ft, known := types[k]
		if !known {
			out = append(out, Problem{Key: at + "." + k, Message: "unknown key; known: " + strings.Join(names, ", ")})
			continue
		}
		if m[k] == nil {
			continue
		}
		st := ft
		if st.Kind() == reflect.Pointer {
			st = st.Elem()
		}
		if st.Kind() == reflect.Struct {
			out = append(out, checkFields(at+"."+k, m[k], st)...)
			continue
		}
		if p, bad := decodeProblem(at+"."+k, m[k], &leaf{key: at + "." + k, typ: ft, secret: secretFull}); bad {
			out = append(out, p)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// resolveToolPaths makes the tools' secret file paths relative to the configuration file's
// folder absolute, as every other _file key is read.
func (t *Tools) resolveToolPaths(dir string) {
	if dir == "" {
		return
	}
	abs := func(m map[string]string) {
		for k, p := range m {
			if p != "" && !filepath.IsAbs(p) {
				m[k] = filepath.Join(dir, p)
			}
		}
	}
	for _, s := range t.Servers {
		abs(s.EnvFile)
		abs(s.HeadersFile)
	}
}

// validate checks tools.* for Validate.
func (t Tools) validate(v *validator) {
	for _, name := range sortedKeys(t.Servers) {
		s, at := t.Servers[name], "tools.servers."+name
		if !toolServerNameRE.MatchString(name) {
			v.add(at, "a server name is 1 to 32 letters, digits or '-', starting with a letter or digit (its tools are offered as <name>__<tool>)")
		}
		switch {
		case len(s.Command) == 0 && s.URL == "":
			v.add(at, "set command (a stdio server) or url (a streamable-HTTP server)")
		case len(s.Command) > 0 && s.URL != "":
			v.add(at, "set command or url, not both")
		case len(s.Command) > 0 && strings.TrimSpace(s.Command[0]) == "":
			v.add(at+".command", "the program must not be empty")
		case s.URL != "":
			v.httpURL(at+".url", s.URL)
		}
		if s.URL == "" && (len(s.Headers) > 0 || len(s.HeadersFile) > 0) {
			v.add(at+".headers", "headers are for HTTP servers (url)")
		}
		if len(s.Command) == 0 && (len(s.Env) > 0 || len(s.EnvFile) > 0 || s.Dir != "") {
			v.add(at+".env", "env, env_file and dir are for stdio servers (command)")
		}
		for _, k := range sortedKeys(s.Headers) {
			if _, dup := s.HeadersFile[k]; dup {
				v.add(at+".headers_file", "header "+k+" is set in headers too; set it once")
			}
		}
		for _, k := range sortedKeys(s.Env) {
			if _, dup := s.EnvFile[k]; dup {
				v.add(at+".env_file", "variable "+k+" is set in env too; set it once")
			}
		}
		v.globs(at+".include", s.Include)
		v.globs(at+".exclude", s.Exclude)
		if s.CallTimeout < 0 {
			v.add(at+".call_timeout", "must not be negative")
		}
	}
	for i, r := range t.Policy {
		at := fmt.Sprintf("tools.policy[%d]", i)
		if len(r.Tools) == 0 {
			v.add(at+".tools", "a rule names at least one tool glob, like tickets__create_*")
		}
		v.globs(at+".tools", r.Tools)
		if r.Approval != "" {
			v.oneOf(at+".approval", r.Approval, ApprovalNever, ApprovalAlways, ApprovalAdmin)
		}
		v.nonEmptyItems(at+".allow", r.Allow)
	}
	for _, g := range t.Subagents {
		if g == ToolsInherit || g == ToolsNone {
			if len(t.Subagents) > 1 {
				v.add("tools.subagents", g+" stands alone, not in a list of globs")
			}
			continue
		}
		v.globs("tools.subagents", []string{g})
	}
	v.positiveDuration("tools.approval_ttl", t.ApprovalTTL)
	v.positiveDuration("tools.call_timeout", t.CallTimeout)
	v.positiveDuration("tools.connect_timeout", t.ConnectTimeout)
	v.atLeast("tools.max_result_bytes", t.MaxResultBytes, 256)
}

func (v *validator) globs(key string, globs []string) {
	for _, g := range globs {
		if strings.TrimSpace(g) == "" {
			v.add(key, "a glob must not be empty")
			continue
		}
		if _, err := path.Match(g, ""); err != nil {
			v.add(key, fmt.Sprintf("%q is not a valid glob", g))
		}
	}
}

// redactedTools is tools.servers as Redacted prints it: env and header values hidden, URLs
// without credentials.
func redactedTools(servers map[string]ToolServer) map[string]any {
	out := map[string]any{}
	hide := func(m map[string]string) map[string]string {
		if len(m) == 0 {
			return nil
		}
		h := make(map[string]string, len(m))
		for k := range m {
			h[k] = RedactedValue
		}
		return h
	}
	for name, s := range servers {
		entry := map[string]any{}
		if len(s.Command) > 0 {
			entry["command"] = s.Command
		}
		if e := hide(s.Env); e != nil {
			entry["env"] = e
		}
		if len(s.EnvFile) > 0 {
			entry["env_file"] = s.EnvFile
		}
		if s.Dir != "" {
			entry["dir"] = s.Dir
		}
		if s.URL != "" {
			entry["url"] = maskToolURL(s.URL)
		}
		if h := hide(s.Headers); h != nil {
			entry["headers"] = h
		}
		if len(s.HeadersFile) > 0 {
			entry["headers_file"] = s.HeadersFile
		}
		if len(s.Include) > 0 {
			entry["include"] = s.Include
		}
		if len(s.Exclude) > 0 {
			entry["exclude"] = s.Exclude
		}
		if s.CallTimeout > 0 {
			entry["call_timeout"] = s.CallTimeout.String()
		}
		out[name] = entry
	}
	return out
}

// maskToolURL hides a tool server URL's user information and query, where credentials go.
func maskToolURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return RedactedValue
	}
	if u.RawQuery != "" {
		u.RawQuery = "redacted"
	}
	return maskURL(u.String(), true)
}
