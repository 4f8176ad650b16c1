package slack

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
)

// delivery is one decoded Socket Mode envelope or HTTP request.
type delivery struct {
	in   channels.Inbound
	resp *responder // an interaction's clicker
	skip bool       // nothing for the router: acknowledge and forget
	// challenge is a url_verification's (HTTP mode answers it).
	challenge string
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
		if cb.Type == "url_verification" {
			return delivery{skip: true, challenge: cb.Challenge}, nil
		}
		in, kind := eventInbound(cb, ev, me, now)
		switch kind {
		case kindUninstall:
			c.uninstalled(cb.TeamID, ev.Type)
			return delivery{skip: true}, nil
		case kindIgnore:
			return delivery{skip: true}, nil
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
	team := d.in.Conv.Workspace
	if _, t, ok := strings.Cut(team, "/"); ok {
		team = t
	}
	if _, gone := c.revoked.Load(team); gone {
		c.log.Info("slack: dropping an event of a workspace that uninstalled the app", "team", team)
		return nil
	}
	if it := d.in.Interaction; it != nil && d.resp != nil && it.ID != "" {
		c.pending.Store(it.ID, *d.resp)
		defer c.pending.Delete(it.ID)
	}
	return h.HandleInbound(ctx, c, d.in)
}

// uninstalled stops work for a workspace after app_uninstalled or tokens_revoked.
func (c *Channel) uninstalled(team, why string) {
	if team == "" {
		return
	}
	c.revoked.Store(team, struct{}{})
	c.log.Warn("slack: the app lost its access to a workspace; its events are dropped from now on", "team", team, "event", why)
	if c.cfg.OnUninstall != nil {
		c.cfg.OnUninstall(team)
	}
}
