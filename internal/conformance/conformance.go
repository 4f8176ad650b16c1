// Package conformance checks the request bodies the adapters send against the platforms'
// published rules: required fields, JSON types, lengths (in the unit each platform counts),
// enumerations, unknown fields, and the structure of Slack's Block Kit and Discord's components
// (what may nest in what). The rules live in one table per platform (slack.go, discord.go,
// telegram.go), each next to the URL of the documentation it comes from, and cover the methods
// and routes the adapters call.
//
// The fakes in internal/fake run every request they receive through Check and keep what it
// reports; their test constructors fail the test listing the violations, so every test that
// drives an adapter checks conformance too. A violation the adapters are known to commit is
// listed in known.go with its reason, and Check leaves it out.
package conformance

import (
	"fmt"
	"strings"
)

// Platform names a chat platform whose rules the package knows.
type Platform string

// The platforms.
const (
	Slack    Platform = "slack"
	Discord  Platform = "discord"
	Telegram Platform = "telegram"
)

// RuleKind says which kind of rule a violation breaks.
type RuleKind string

// The kinds of rules.
const (
	RuleRequired  RuleKind = "required"  // a required field is missing
	RuleType      RuleKind = "type"      // a field has the wrong JSON type
	RuleLength    RuleKind = "length"    // a string is too short or too long
	RuleCount     RuleKind = "count"     // an array has too few or too many items
	RuleEnum      RuleKind = "enum"      // a value is not one the field takes
	RuleUnknown   RuleKind = "unknown"   // a field the object does not document
	RuleStructure RuleKind = "structure" // something nested where it may not be, or fields that exclude each other
	RuleBody      RuleKind = "body"      // the body cannot be read at all
)

// Violation is one broken rule in one request.
type Violation struct {
	Platform Platform
	// Method is the Web API method (Slack, Telegram) or "VERB /route" (Discord, the route as
	// in Discord's documentation, e.g. "POST /channels/{channel.id}/messages").
	Method string
	Rule   RuleKind
	// Path locates the offending value: "blocks[2].text.text"; "" is the whole body.
	Path   string
	Detail string
	// Doc is the documentation the rule comes from.
	Doc string
}

// String formats v for a test failure: method, rule, path, what is wrong, and the doc URL.
func (v Violation) String() string {
	path := v.Path
	if path == "" {
		path = "(body)"
	}
	return fmt.Sprintf("%s %s: %s: %s: %s (%s)", v.Platform, v.Method, v.Rule, path, v.Detail, v.Doc)
}

// Report formats violations one a line, for a test failure.
func Report(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("\n\t")
		b.WriteString(v.String())
	}
	return b.String()
}

// Check checks one request body of method on platform (contentType as sent, the body's bytes)
// and returns the rules it breaks, known violations (Known) left out. A method the tables do not
// cover is not checked; an unreadable body is one RuleBody violation. Check never panics.
func Check(p Platform, method, contentType string, body []byte) []Violation {
	spec := lookup(p, method)
	if spec == nil {
		return nil
	}
	v, err := ParseBody(contentType, body)
	if err != nil {
		return []Violation{{Platform: p, Method: method, Rule: RuleBody, Detail: err.Error(), Doc: spec.Doc}}
	}
	return CheckValue(p, method, v)
}

// CheckValue is Check for a body already decoded (ParseBody's result).
func CheckValue(p Platform, method string, body any) []Violation {
	spec := lookup(p, method)
	if spec == nil {
		return nil
	}
	c := &checker{platform: p, method: method}
	c.field("", spec, body, nil)
	out := c.out[:0:0]
	for _, v := range c.out {
		if !known(v) {
			out = append(out, v)
		}
	}
	return out
}

// Covered reports whether the tables have rules for method on platform.
func Covered(p Platform, method string) bool { return lookup(p, method) != nil }

// Methods lists the methods (Discord: "VERB /route") the tables cover on platform.
func Methods(p Platform) []string {
	var out []string
	for m := range tables[p] {
		out = append(out, m)
	}
	return out
}

var tables = map[Platform]map[string]*Field{
	Slack:    slackMethods,
	Discord:  discordRoutes,
	Telegram: telegramMethods,
}

func lookup(p Platform, method string) *Field {
	return tables[p][method]
}
