package router

// Metrics counts the router's decisions. The cmd layer implements it with
// Prometheus counters; a nil Metrics in the options means no counting. Label values are short
// fixed words (platform names, the reasons below, command names), never user text.
type Metrics interface {
	// Inbound counts an event handed to the router.
	Inbound(platform string)
	// DedupeHit counts an event seen before (a platform redelivery).
	DedupeHit(platform string)
	// Refused counts an event not turned into a run, by reason: bot, no_identity, not_allowed,
	// dm_disabled, not_addressed, empty, too_long, busy, paused, forged_action, foreign_click,
	// expired, admin_only, unknown_command.
	Refused(platform, reason string)
	// Command counts a command handled, by name.
	Command(platform, command string)
	// OutboundError counts a reply the router could not send (send_failed).
	OutboundError(platform, kind string)
}

type nopMetrics struct{}

func (nopMetrics) Inbound(string)               {}
func (nopMetrics) DedupeHit(string)             {}
func (nopMetrics) Refused(string, string)       {}
func (nopMetrics) Command(string, string)       {}
func (nopMetrics) OutboundError(string, string) {}
