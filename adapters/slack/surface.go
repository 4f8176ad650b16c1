package slack

import (
	"context"
	"log/slog"
	"strings"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/conv"
)

// Slack's AI surfaces. An app on features.agent_view (every new app: what `bot slack-manifest`
// prints) lives in the DM of its Messages tab: app_home_opened on that tab says a user opened
// it, and each top-level message there is a thread the agent answers in (Config.AgentView). An
// app still on features.assistant_view lives in the assistant pane: assistant_thread_started
// opens a thread Slack roots, whose messages come as message.im replies in it. Both are offered
// the suggested prompts when opened, and both thread kinds are titled after their first
// message — the prompts and titles sent off the ack's path, one conversation's in order.
// https://docs.slack.dev/ai/migrating-to-agent-messaging/

// MaxSuggestedPrompts is how many suggested prompts Slack shows (assistant.threads.
// setSuggestedPrompts "up to four"; the manifest's agent_view.suggested_prompts at most 4).
const MaxSuggestedPrompts = 4

// maxTitle bounds a thread's title and a prompt's.
const maxTitle = 60

// Prompt is a suggested prompt as Slack shows it: its title, and the message sent when the user
// picks it.
type Prompt struct{ Title, Message string }

// SuggestedPrompts returns prompts (Config.SuggestedPrompts) as the adapter offers them and the
// app manifest declares them: the first MaxSuggestedPrompts that are not blank, each titled by
// itself cut to 60 characters.
func SuggestedPrompts(prompts []string) []Prompt {
	var out []Prompt
	for _, p := range prompts {
		if strings.TrimSpace(p) == "" {
			continue
		}
		if len(out) == MaxSuggestedPrompts {
			break
		}
		out = append(out, Prompt{Title: truncateRunes(p, maxTitle), Message: p})
	}
	return out
}

func threadKey(k conv.Key) string { return k.Chat + "/" + k.Thread }

// surfaces handles the AI surfaces opened (opened) and titles their threads (title), the calls
// sent off the ack's path, one conversation's in order (followups).
type surfaces struct {
	cfg       *Config
	web       *webAPI
	installs  *installs
	log       *slog.Logger
	recent    *recentEvents  // the dispatcher's: ids of the events handled here (dedupe)
	untitled  recentEvents   // channel/thread of the assistant threads awaiting their first message (the last 4,096)
	followups *kit.Followups // assistant threads' prompts and titles, sent off the ack's path
}

// opened handles a user opening the AI surface at k — a new assistant thread (k.Thread
// set), remembered so that its first message titles it, or an agent's DM (no thread) — and
// offers the suggested prompts there off the ack's path: a call that may wait out rate limits
// for 30 s is no work the ack waits for. In a DM the prompts go without thread_ts: Slack pins
// them at the top of the agent's conversation, and fails an agent app's call that names a
// thread without a word. A failed offer gives the event's id back (recent.release), so
// Slack's redelivery tries again.
// https://docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts
func (sf *surfaces) opened(ctx context.Context, k conv.Key, eventID string) {
	if k.Thread != "" {
		sf.untitled.claim(threadKey(k))
	}
	offer := SuggestedPrompts(sf.cfg.SuggestedPrompts)
	if len(offer) == 0 {
		return
	}
	prompts := make([]slackgo.AssistantThreadsPrompt, 0, len(offer))
	for _, p := range offer {
		prompts = append(prompts, slackgo.AssistantThreadsPrompt{Title: p.Title, Message: p.Message})
	}
	sf.followups.Go(ctx, threadKey(k), func(ctx context.Context) {
		api, err := sf.installs.client(ctx, k.Workspace)
		if err == nil {
			err = sf.web.callWaiting(ctx, k.Workspace, "assistant.threads.setSuggestedPrompts", func(ctx context.Context) error {
				// slack-go leaves an empty ThreadTS and Title out of the call.
				return api.SetAssistantThreadsSuggestedPromptsContext(ctx, slackgo.AssistantThreadsSetSuggestedPromptsParameters{
					ChannelID: k.Chat, ThreadTS: k.Thread, Prompts: prompts})
			})
		}
		if err != nil {
			sf.recent.release(eventID)
			sf.log.Warn("slack: offering the suggested prompts failed", "channel", k.Chat, "err", err)
		}
	})
}

// title names a thread after its first message, once the message is handed over, off
// the ack's path: an assistant thread's first message (the thread was opened by
// assistant_thread_started), or — Config.AgentView — the top-level DM message that starts a
// thread of the agent's conversation (titled once per process, a redelivery not again). Slack
// shows the title in the DM's history. https://docs.slack.dev/reference/methods/assistant.threads.setTitle
func (sf *surfaces) title(ctx context.Context, in channels.Inbound) {
	k := in.Conv
	first := sf.untitled.take(threadKey(k))
	if !first && sf.cfg.AgentView && in.Direct && k.Thread == in.MessageID {
		first = sf.recent.claim("title:" + threadKey(k))
	}
	if !first {
		return
	}
	title := strings.Join(strings.Fields(in.Text), " ")
	if title == "" {
		return
	}
	sf.followups.Go(ctx, threadKey(k), func(ctx context.Context) {
		api, err := sf.installs.client(ctx, k.Workspace)
		if err != nil {
			return
		}
		err = sf.web.callWaiting(ctx, k.Workspace, "assistant.threads.setTitle", func(ctx context.Context) error {
			return api.SetAssistantThreadsTitleContext(ctx, slackgo.AssistantThreadsSetTitleParameters{
				ChannelID: k.Chat, ThreadTS: k.Thread, Title: truncateRunes(title, maxTitle)})
		})
		if err != nil {
			sf.log.Debug("slack: titling the thread failed", "channel", k.Chat, "err", err)
		}
	})
}

func truncateRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
