package slackfake

import (
	"slices"

	"github.com/switchboard-bot/switchboard/internal/conformance"
)

// The arguments each Web API method takes are conformance's Slack table (conformance.SlackArgs,
// each method's reference page): Slack ignores an argument a method does not take without a
// word — unfurl_links sent to chat.update changes nothing, and says nothing —, so the fake does
// not refuse one either: it records it (Call.Undocumented), and the conformance check the fake
// runs on every request reports it (Violations).

// DocumentedArgs returns the arguments Slack's method reference lists for method (the token
// aside), sorted; ok is false for a method the fake does not implement.
func DocumentedArgs(method string) (args []string, ok bool) { return conformance.SlackArgs(method) }

// DocumentedMethods returns the Web API methods the fake implements, each with its documented
// arguments (DocumentedArgs), sorted.
func DocumentedMethods() []string { return conformance.SlackMethods() }

// undocumented returns the parameters of a call of method that its reference does not list,
// sorted; none for a method the fake does not implement (it answers unknown_method).
func undocumented(method string, params map[string]string) []string {
	args, ok := conformance.SlackArgs(method)
	if !ok {
		return nil
	}
	var out []string
	for p := range params {
		if !slices.Contains(args, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
