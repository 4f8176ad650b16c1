package slack

import (
	"time"

	"github.com/switchboard-bot/switchboard/channels/kit"
)

// tier is a Web API method's rate-limit tier. Slack applies the limits per method, per app, per
// workspace; a method with special limits (chat.postMessage: about one a second per channel,
// kept by pacer; assistant.threads.setStatus: best effort, never waits) is tierSpecial and not
// budgeted here.
type tier uint8

const (
	tierSpecial tier = iota
	tier1
	tier2
	tier3
	tier4
)

// tierRates is each tier's documented floor ("Tier 1: 1+ per minute, Tier 2: 20+, Tier 3: 50+,
// Tier 4: 100+" — https://docs.slack.dev/apis/web-api/rate-limits) with a modest burst: a fifth
// of the minute's budget at once ("a small amount of burst behavior is tolerated" for Tier 1).
var tierRates = [...]struct {
	perMinute int
	burst     int
}{
	tier1: {perMinute: 1, burst: 1},
	tier2: {perMinute: 20, burst: 4},
	tier3: {perMinute: 50, burst: 10},
	tier4: {perMinute: 100, burst: 20},
}

// methodTiers is the tier of every Web API method the adapter calls through call, as each
// method's reference page (https://docs.slack.dev/reference/methods/<method>, "Rate Limits")
// states it. Checked again for the newest entries: files.getUploadURLExternal and
// files.completeUploadExternal are Tier 4 on their pages (api.slack.com/methods/<method>,
// "Rate limits: Tier 4"); chat.postEphemeral Tier 4 and chat.startStream Tier 2 as Slack's own
// SDK tables them (slackapi/java-slack-sdk, MethodsRateLimits.java: CHAT_POST_EPHEMERAL Tier4,
// CHAT_START_STREAM Tier2, with chat.appendStream Tier 4 and chat.stopStream Tier 2 as here).
// A method missing here (chat.postMessage, paced per channel; the upload to the URL
// files.getUploadURLExternal returns, which is no Web API method) is not budgeted.
// conversations.history and conversations.replies are Tier 3; Slack holds commercially
// distributed apps outside the Marketplace installed since 29 May 2025 to less (1 a minute),
// and a 429 there pauses them as Retry-After says.
var methodTiers = map[string]tier{
	"chat.update":                           tier3,
	"chat.delete":                           tier3,
	"chat.postEphemeral":                    tier4,
	"views.open":                            tier4,
	"conversations.history":                 tier3,
	"conversations.replies":                 tier3,
	"assistant.threads.setTitle":            tier4,
	"assistant.threads.setSuggestedPrompts": tier4,
	"chat.startStream":                      tier2,
	"chat.appendStream":                     tier4,
	"chat.stopStream":                       tier2,
	methodUploadURL:                         tier4,
	methodComplete:                          tier4,
}

type tierKey struct {
	team string
	tier tier
}

// tierLimiter spends each workspace's budget of every tier (a generic cell rate per
// (workspace, tier): the tier's burst at once, then its per-minute rate), so a busy workspace
// waits for its own budget instead of meeting 429s, and workspaces never wait for one another.
// It books slots and says how long to wait; the caller waits (respecting its context), so it
// runs no goroutine. A 429 on a method pauses its tier's bucket for the Retry-After.
// Methods of one tier share a bucket: stricter than Slack's per-method limits, never looser.
// Buckets full again are dropped (kit.PacerSweepEvery), so memory follows the workspaces
// active in the last minute or so.
type tierLimiter struct {
	buckets *kit.Pacer[tierKey]
}

func newTierLimiter() *tierLimiter { return &tierLimiter{buckets: kit.NewPacer[tierKey]()} }

// interval is the time one call of tier t costs.
func (t tier) interval() time.Duration { return time.Minute / time.Duration(tierRates[t].perMinute) }

// reserve books team's next slot for method and returns how long to wait for it; zero for a
// method no tier budgets.
func (l *tierLimiter) reserve(team, method string, now time.Time) time.Duration {
	t := methodTiers[method]
	if t == tierSpecial {
		return 0
	}
	return l.buckets.Reserve(tierKey{team, t}, now, t.interval(), tierRates[t].burst)
}

// pause holds team's calls of method's tier until until (a 429's Retry-After): calls booked
// from now on go at until at the earliest, then one per interval — no burst right after a 429.
func (l *tierLimiter) pause(team, method string, until time.Time) {
	t := methodTiers[method]
	if t == tierSpecial {
		return
	}
	l.buckets.Pause(tierKey{team, t}, until, t.interval(), tierRates[t].burst)
}
