package slack

import (
	"context"
	"fmt"
	"sync"

	"github.com/switchboard-bot/switchboard/channels"
)

// delivery is one decoded Socket Mode envelope or HTTP request.
type delivery struct {
	in   channels.Inbound
	resp *responder // an interaction's clicker
	skip bool       // nothing for the router: acknowledge and forget
	// challenge is a url_verification's (HTTP mode answers it).
	challenge string
	// opened marks an AI surface opened (assistant_thread_started, app_home_opened on the
	// Messages tab): in.Conv is the new assistant thread, or the agent's DM.
	opened bool
	// refused, with skip, is why an envelope handled here is not acknowledged, so that Slack
	// delivers it again (an uninstall whose install store could not be changed).
	refused error
}

// maxHandovers bounds how many conversations are handed to the Handler at once, as the
// Telegram adapter does: a burst of envelopes over many conversations waits its turn in the
// lanes (kit.Lanes) instead of holding a goroutine (and its stack) per conversation. A
// conversation's backlog is not bounded: an envelope is acknowledged only once handed over, so
// what waits is what Slack would otherwise redeliver, bounded by its retries.
const maxHandovers = 64

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
			return delivery{skip: true, refused: c.uninstall(cb, ev.Type)}, nil
		case kindIgnore:
			return delivery{skip: true}, nil
		case kindAssistant, kindAgentOpened:
			return delivery{in: in, opened: true}, nil
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
// app, or never installed it, are dropped (see served).
func (c *Channel) deliver(ctx context.Context, d delivery) error {
	h, _ := c.state()
	if h == nil {
		return fmt.Errorf("slack: not started")
	}
	if !c.served(ctx, d.in.Conv.Workspace) {
		c.log.Info("slack: dropping an event of a workspace the app is not installed in", "workspace", d.in.Conv.Workspace)
		return nil
	}
	if d.opened {
		// Not the router's: it sees messages only. A redelivered envelope (an ack lost or
		// late) offers the prompts once; a failed offer is given back for the redelivery.
		if !c.recent.claim(d.in.EventID) {
			c.log.Debug("slack: duplicate AI surface event ignored", "event", d.in.EventID)
			return nil
		}
		c.surfaceOpened(ctx, d.in.Conv, d.in.EventID)
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
		c.titleThread(ctx, d.in)
	}
	return nil
}

// maxRecentEvents bounds recentEvents: Slack redelivers within minutes (three retries), so the
// last few thousand ids are plenty.
const maxRecentEvents = 4096

// recentEvents remembers the last ids of the events this process handled itself (not through
// the router), so a redelivery is handled once. Safe for concurrent use; the zero value is
// ready.
type recentEvents struct {
	mu   sync.Mutex
	slot map[string]int // id → its slot in ring
	ring []string
	next int
}

// claim records id and reports whether it was new. An empty id is always new (nothing to
// dedupe on).
func (r *recentEvents) claim(id string) bool {
	if id == "" {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.slot[id]; seen {
		return false
	}
	if r.ring == nil {
		r.slot, r.ring = make(map[string]int, maxRecentEvents), make([]string, maxRecentEvents)
	}
	if old := r.ring[r.next]; old != "" && r.slot[old] == r.next {
		delete(r.slot, old)
	}
	r.ring[r.next], r.slot[id] = id, r.next
	r.next = (r.next + 1) % len(r.ring)
	return true
}

// release forgets id, so its redelivery is handled again (the first handling failed).
func (r *recentEvents) release(id string) { r.take(id) }

// take forgets id and reports whether it was remembered.
func (r *recentEvents) take(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.slot[id]; !ok {
		return false
	}
	delete(r.slot, id)
	return true
}

// uninstall handles app_uninstalled or tokens_revoked (why) once per event: a redelivered
// envelope (its ack lost or late; the same event_id) does not purge the workspace's pending
// work again. When the install store could not be changed the event's id is given back and the
// error returned, so that the envelope is not acknowledged and Slack's redelivery tries again.
func (c *Channel) uninstall(cb callback, why string) error {
	id := callbackEventID(cb, "")
	if !c.recent.claim(id) {
		c.log.Debug("slack: duplicate uninstall event ignored", "event", id, "type", why)
		return nil
	}
	var err error
	if ent := cb.orgWide(); ent != "" {
		err = c.uninstalledOrg(ent, why)
	} else {
		err = c.uninstalled(cb.TeamID, why)
	}
	if err != nil {
		c.recent.release(id)
		return fmt.Errorf("slack: %s: %w", why, err)
	}
	return nil
}

// uninstalledOrg stops work for every workspace of an Enterprise Grid organization after
// app_uninstalled or tokens_revoked for its org-wide install: every token stored under the
// enterprise is deleted, and events of its workspaces are dropped until it installs again.
// The error is the install store's, when it could not be changed.
func (c *Channel) uninstalledOrg(enterprise, why string) error {
	c.revoked.Store(enterprise, struct{}{})
	err := c.forgetEnterprise(context.Background(), enterprise)
	c.log.Warn("slack: the app lost its access to an organization; the events of its workspaces are dropped from now on", "enterprise", enterprise, "event", why)
	if c.cfg.OnUninstall != nil {
		c.cfg.OnUninstall(enterprise)
	}
	return err
}

// uninstalled stops work for a workspace after app_uninstalled or tokens_revoked. The error
// is the install store's, when it could not be changed.
func (c *Channel) uninstalled(team, why string) error {
	if team == "" {
		return nil
	}
	c.revoked.Store(team, struct{}{})
	err := c.forgetInstall(context.Background(), team)
	c.log.Warn("slack: the app lost its access to a workspace; its events are dropped from now on", "team", team, "event", why)
	if c.cfg.OnUninstall != nil {
		c.cfg.OnUninstall(team)
	}
	return err
}

// served reports whether events of workspace (a conversation key's workspace) are handled.
// With an Installations store the store decides, the same for every process sharing it: a
// workspace with no install (deleted by whichever process saw app_uninstalled) is not served,
// except the configured bot token's own workspace (see lookupTeam). Without a store, a
// workspace is served until this process sees it uninstall the app. A store that cannot be
// read does not drop the event: its answer fails or waits like any send.
func (c *Channel) served(ctx context.Context, workspace string) bool {
	if c.cfg.Installations == nil || workspace == "" {
		return !c.isRevoked(teamOf(workspace)) && !c.isRevoked(enterpriseOf(workspace))
	}
	tc, err := c.lookupTeam(ctx, workspace)
	return err != nil || tc != nil
}
