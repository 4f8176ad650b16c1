package slack

import (
	"context"
	"fmt"
	"strings"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
)

// delivery is one decoded Socket Mode envelope or HTTP request.
type delivery struct {
	in   channels.Inbound
	resp *responder // an interaction's clicker
	skip bool       // nothing for the router: acknowledge and forget
	// challenge is a url_verification's (HTTP mode answers it).
	challenge string
	// assistant marks an assistant_thread_started: in.Conv is the new thread.
	assistant bool
}

// Envelope types, as Socket Mode names them; HTTP mode maps its three paths onto them.
const (
	typeEvents      = "events_api"
	typeInteractive = "interactive"
	typeSlash       = "slash_commands"
)

// decodeDelivery decodes a payload of kind typ. An error means the payload is malformed.
func (c *Channel) decodeDelivery(typ string, payload []byte) (delivery, error) {
	_, me := c.state()
	now := c.now()
	switch typ {
	case typeEvents:
		cb, ev, err := decodeCallback(payload)
		if err != nil {
			return delivery{}, err
		}
		switch cb.Type {
		case "url_verification":
			return delivery{skip: true, challenge: cb.Challenge}, nil
		case "app_rate_limited":
			c.log.Warn("slack: Slack is holding back this app's events for a minute (app_rate_limited)", "team", cb.TeamID)
			return delivery{skip: true}, nil
		}
		in, kind := eventInbound(cb, ev, me, now)
		switch kind {
		case kindUninstall:
			if ent := cb.orgWide(); ent != "" {
				c.uninstalledOrg(ent, ev.Type)
			} else {
				c.uninstalled(cb.TeamID, ev.Type)
			}
			return delivery{skip: true}, nil
		case kindIgnore:
			return delivery{skip: true}, nil
		case kindAssistant:
			return delivery{in: in, assistant: true}, nil
		}
		return delivery{in: in}, nil
	case typeInteractive:
		it, err := decodeInteraction(payload)
		if err != nil {
			return delivery{}, err
		}
		in, r, ok := interactionInbound(it, now)
		if !ok {
			return delivery{skip: true}, nil
		}
		return delivery{in: in, resp: &r}, nil
	case typeSlash:
		v, err := slashValues(payload)
		if err != nil {
			return delivery{}, err
		}
		in, err := slashInbound(v, c.cfg.Command, now)
		if err != nil {
			return delivery{}, err
		}
		return delivery{in: in}, nil
	}
	return delivery{}, fmt.Errorf("%w: envelope type %q", errMalformed, typ)
}

// deliver hands a decoded delivery to the Handler. Events of a workspace that uninstalled the
// app are dropped.
func (c *Channel) deliver(ctx context.Context, d delivery) error {
	h, _ := c.state()
	if h == nil {
		return fmt.Errorf("slack: not started")
	}
	team, ent := d.in.Conv.Workspace, ""
	if e, t, ok := strings.Cut(team, "/"); ok {
		ent, team = e, t
	}
	if _, gone := c.revoked.Load(team); gone {
		c.log.Info("slack: dropping an event of a workspace that uninstalled the app", "team", team)
		return nil
	}
	if _, gone := c.revoked.Load(ent); gone && ent != "" {
		c.log.Info("slack: dropping an event of an organization that uninstalled the app", "enterprise", ent, "team", team)
		return nil
	}
	if d.assistant {
		c.assistantStarted(ctx, d.in.Conv)
		return nil
	}
	if it := d.in.Interaction; it != nil && d.resp != nil && it.ID != "" {
		c.pending.Store(it.ID, *d.resp)
		defer c.pending.Delete(it.ID)
	}
	if err := h.HandleInbound(ctx, c, d.in); err != nil {
		return err
	}
	if d.in.Interaction == nil && d.in.Command == "" && d.in.Conv.Thread != "" {
		c.titleAssistantThread(ctx, d.in)
	}
	return nil
}

func threadKey(k conv.Key) string { return k.Chat + "/" + k.Thread }

// maxTitle bounds an assistant thread's title.
const maxTitle = 60

// assistantStarted remembers a new assistant thread, so that its first message gives it a
// title, and offers the suggested prompts there off the ack's path: a call that may wait out
// rate limits for 30 s is no work the ack waits for. The thread's title follows its prompts.
func (c *Channel) assistantStarted(ctx context.Context, k conv.Key) {
	c.untitled.Store(threadKey(k), struct{}{})
	if len(c.cfg.SuggestedPrompts) == 0 {
		return
	}
	prompts := make([]slackgo.AssistantThreadsPrompt, 0, len(c.cfg.SuggestedPrompts))
	for _, p := range c.cfg.SuggestedPrompts {
		prompts = append(prompts, slackgo.AssistantThreadsPrompt{Title: truncateRunes(p, maxTitle), Message: p})
	}
	c.followups.Go(ctx, threadKey(k), func(ctx context.Context) {
		api, err := c.client(ctx, k.Workspace)
		if err != nil {
			c.log.Warn("slack: offering the suggested prompts failed", "channel", k.Chat, "err", err)
			return
		}
		err = c.call(ctx, "assistant.threads.setSuggestedPrompts", func(ctx context.Context) error {
			return api.SetAssistantThreadsSuggestedPromptsContext(ctx, slackgo.AssistantThreadsSetSuggestedPromptsParameters{
				ChannelID: k.Chat, ThreadTS: k.Thread, Prompts: prompts})
		})
		if err != nil {
			c.log.Warn("slack: offering the suggested prompts failed", "channel", k.Chat, "err", err)
		}
	})
}

// titleAssistantThread names an assistant thread after its first message, once the message is
// handed over, off the ack's path.
func (c *Channel) titleAssistantThread(ctx context.Context, in channels.Inbound) {
	k := in.Conv
	if _, fresh := c.untitled.LoadAndDelete(threadKey(k)); !fresh {
		return
	}
	title := strings.TrimSpace(strings.Join(strings.Fields(in.Text), " "))
	if title == "" {
		return
	}
	c.followups.Go(ctx, threadKey(k), func(ctx context.Context) {
		api, err := c.client(ctx, k.Workspace)
		if err != nil {
			return
		}
		err = c.call(ctx, "assistant.threads.setTitle", func(ctx context.Context) error {
			return api.SetAssistantThreadsTitleContext(ctx, slackgo.AssistantThreadsSetTitleParameters{
				ChannelID: k.Chat, ThreadTS: k.Thread, Title: truncateRunes(title, maxTitle)})
		})
		if err != nil {
			c.log.Debug("slack: titling the assistant thread failed", "channel", k.Chat, "err", err)
		}
	})
}

func truncateRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// uninstalledOrg stops work for every workspace of an Enterprise Grid organization after
// app_uninstalled or tokens_revoked for its org-wide install: every token stored under the
// enterprise is deleted, and events of its workspaces are dropped until it installs again.
func (c *Channel) uninstalledOrg(enterprise, why string) {
	c.revoked.Store(enterprise, struct{}{})
	c.forgetEnterprise(context.Background(), enterprise)
	c.log.Warn("slack: the app lost its access to an organization; the events of its workspaces are dropped from now on", "enterprise", enterprise, "event", why)
	if c.cfg.OnUninstall != nil {
		c.cfg.OnUninstall(enterprise)
	}
}

// uninstalled stops work for a workspace after app_uninstalled or tokens_revoked.
func (c *Channel) uninstalled(team, why string) {
	if team == "" {
		return
	}
	c.revoked.Store(team, struct{}{})
	c.forgetInstall(context.Background(), team)
	c.log.Warn("slack: the app lost its access to a workspace; its events are dropped from now on", "team", team, "event", why)
	if c.cfg.OnUninstall != nil {
		c.cfg.OnUninstall(team)
	}
}
