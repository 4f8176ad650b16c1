package tools

import (
	"path"
	"slices"
	"strings"
)

// decision is what the policy says of one tool for one caller.
type decision struct {
	Allowed  bool
	Approval Approval
}

// policy is the compiled tools.policy and tools.subagents.
type policy struct {
	rules     []Rule
	subagents []string
}

func newPolicy(c Config) *policy {
	return &policy{rules: c.Policy, subagents: c.Subagents}
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// decide applies the first rule naming the offered tool name to id.
func (p *policy) decide(name string, id Identity, known bool) decision {
	for _, r := range p.rules {
		if !matchAny(r.Tools, name) {
			continue
		}
		d := decision{Approval: r.Approval}
		if d.Approval == "" {
			d.Approval = ApprovalNever
		}
		d.Allowed = known && allows(r.Allow, id)
		return d
	}
	return decision{Allowed: known, Approval: ApprovalNever}
}

// allows reports whether the allow list admits id; an empty list admits everyone.
func allows(allow []string, id Identity) bool {
	if len(allow) == 0 {
		return true
	}
	for _, a := range allow {
		a = strings.TrimSpace(a)
		switch {
		case a == AllowEveryone:
			return true
		case a == AllowAdmins:
			if id.Admin {
				return true
			}
		case a == id.ChannelUserID && id.ChannelUserID != "":
			return true
		case a == id.Platform+":"+id.ChannelUserID && id.ChannelUserID != "":
			return true
		}
	}
	return false
}

// forAgent is what an agent at depth may use of the tool: the caller's decision, narrowed for
// subagents by tools.subagents.
func (p *policy) forAgent(name string, id Identity, known bool, depth int) decision {
	if !id.Scope.Allows(name) {
		return decision{} // not a tool of this place's profile
	}
	d := p.decide(name, id, known)
	if !d.Allowed || depth == 0 {
		return d
	}
	switch {
	case slices.Equal(p.subagents, []string{SubagentsNone}):
		d.Allowed = false
	case slices.Equal(p.subagents, []string{SubagentsInherit}):
		d.Allowed = d.Approval == ApprovalNever
	default:
		d.Allowed = matchAny(p.subagents, name)
	}
	return d
}
