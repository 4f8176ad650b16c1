package slack

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
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

// dispatcher hands what both intakes receive (socket.go, http.go) to the Handler: each payload
// decoded (decodeDelivery), then handed over in its conversation's lane (lanes) — the AI
// surfaces opened and the uninstalls handled here instead. It holds the Handler and who the bot
// is from Start on.
type dispatcher struct {
	cfg          *Config
	redact       *kit.Redactor
	log          *slog.Logger
	clock        *kit.Clock
	ch           channels.Channel // what the Handler is told the deliveries came through
	installs     *installs
	surfaces     *surfaces
	interactions *interactions
	recent       *recentEvents // ids of the events handled here rather than by the router (dedupe)
	lanes        *kit.Lanes    // deliveries handed over one at a time per conversation
	// ackDeadline is when an interaction or a command is acknowledged whatever its handling.
	ackDeadline time.Duration

	kit.Handoff[self] // the Handler and the bot's identity, from Start on
}

func (dp *dispatcher) malformed(kind string, err error) {
	dp.log.Warn("slack: skipping a malformed payload", "kind", kind, "err", dp.redact.Error(err))
	if dp.cfg.OnMalformed != nil {
		dp.cfg.OnMalformed()
	}
}

// decodeDelivery decodes a payload of kind typ. An error means the payload is malformed.
func (dp *dispatcher) decodeDelivery(typ string, payload []byte) (delivery, error) {
	now := dp.clock.Now()
	switch typ {
	case typeEvents:
		return dp.decodeEvent(payload, now)
	case typeInteractive:
		it, err := decodeInteraction(payload)
		if err != nil {
			return delivery{}, err
		}
		msg, r, ok := interactionInbound(it, now)
		if !ok {
			return delivery{skip: true}, nil
		}
		return delivery{in: msg, resp: &r}, nil
	case typeSlash:
		v, err := slashValues(payload)
		if err != nil {
			return delivery{}, err
		}
		msg, err := slashInbound(v, dp.cfg.Command, now)
		if err != nil {
			return delivery{}, err
		}
		return delivery{in: msg}, nil
	}
	return delivery{}, fmt.Errorf("%w: envelope type %q", errMalformed, typ)
}

// decodeEvent decodes an Events API payload.
func (dp *dispatcher) decodeEvent(payload []byte, now time.Time) (delivery, error) {
	_, me := dp.State()
	cb, ev, err := decodeCallback(payload)
	if err != nil {
		return delivery{}, err
	}
	switch cb.Type {
	case "url_verification":
		return delivery{skip: true, challenge: cb.Challenge}, nil
	case "app_rate_limited":
		dp.log.Warn("slack: Slack is holding back this app's events for a minute (app_rate_limited)", "team", cb.TeamID)
		return delivery{skip: true}, nil
	}
	msg, kind := eventInbound(cb, ev, me, now)
	switch kind {
	case kindUninstall:
		return delivery{skip: true, refused: dp.uninstall(cb, ev.Type)}, nil
	case kindIgnore:
		return delivery{skip: true}, nil
	case kindAssistant, kindAgentOpened:
		return delivery{in: msg, opened: true}, nil
	}
	return delivery{in: msg}, nil
}

// deliver hands a decoded delivery to the Handler. Events of a workspace that uninstalled the
// app, or never installed it, are dropped (see served).
func (dp *dispatcher) deliver(ctx context.Context, d delivery) error {
	h, _ := dp.State()
	if h == nil {
		return fmt.Errorf("slack: not started")
	}
	if !dp.installs.served(ctx, d.in.Conv.Workspace) {
		dp.log.Info("slack: dropping an event of a workspace the app is not installed in", "workspace", d.in.Conv.Workspace)
		return nil
	}
	if d.opened {
		// Not the router's: it sees messages only. A redelivered envelope (an ack lost or
		// late) offers the prompts once; a failed offer is given back for the redelivery.
		if !dp.recent.claim(d.in.EventID) {
			dp.log.Debug("slack: duplicate AI surface event ignored", "event", d.in.EventID)
			return nil
		}
		dp.surfaces.opened(ctx, d.in.Conv, d.in.EventID)
		return nil
	}
	if it := d.in.Interaction; it != nil && d.resp != nil && it.ID != "" {
		defer dp.interactions.handling(it.ID, *d.resp)()
	}
	if err := h.HandleInbound(ctx, dp.ch, d.in); err != nil {
		return err
	}
	if d.in.Interaction == nil && d.in.Command == "" && d.in.Conv.Thread != "" {
		dp.surfaces.title(ctx, d.in)
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
func (dp *dispatcher) uninstall(cb callback, why string) error {
	id := callbackEventID(cb, "")
	if !dp.recent.claim(id) {
		dp.log.Debug("slack: duplicate uninstall event ignored", "event", id, "type", why)
		return nil
	}
	var err error
	if ent := cb.orgWide(); ent != "" {
		err = dp.installs.uninstalledOrg(ent, why)
	} else {
		err = dp.installs.uninstalled(cb.TeamID, why)
	}
	if err != nil {
		dp.recent.release(id)
		return fmt.Errorf("slack: %s: %w", why, err)
	}
	return nil
}
