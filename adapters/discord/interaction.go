package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/render"
)

// Interaction callback types and the ephemeral flag (Discord's numbers).
const (
	cbMessage        = 4
	cbDeferred       = 5
	cbDeferredUpdate = 6
	cbModal          = 9
	flagEphemeral    = 1 << 6
	// maxNotice keeps an ephemeral notice within one message.
	maxNotice = 1900
)

// ixState is an interaction being handled: whether its one callback has been made.
type ixState struct {
	mu     sync.Mutex
	id     string
	token  string
	acked  bool
	update bool // a component or modal-on-a-message: type 6 is a valid silent ack
	// httpReply, for an interaction that came over HTTP, takes the first callback: it becomes
	// the HTTP response instead of a REST call. Nil once used.
	httpReply chan<- map[string]any
}

// quietAck is the callback that acknowledges without a message: a deferred update for clicks
// (nothing visible changes), else an ephemeral deferred response.
func quietAck(st *ixState) map[string]any {
	if st.update {
		return map[string]any{"type": cbDeferredUpdate}
	}
	return map[string]any{"type": cbDeferred, "data": map[string]any{"flags": flagEphemeral}}
}

// interactions answers what users do on the bot's messages and commands — clicks, selects,
// modal submits, slash commands — from the gateway (dispatcher) or the HTTP endpoint (webhook.go):
// each handed to the Handler and always answered, by the Handler (RespondInteraction, OpenForm)
// or quietly here; a slash command's reply goes through replies (reply.go).
type interactions struct {
	cfg        *Config
	rest       *rest
	s          *discordgo.Session
	bot        *botSelf
	places     *places
	replies    *commandReplies
	dispatcher *dispatcher // the hand-over to the Handler
	workers    *kit.Workers
	clock      *kit.Clock
	ixs        sync.Map // interaction id → *ixState
}

// goHandle handles an interaction from the gateway on its own goroutine, while the intake lives
// (a click needs an answer within 3 s, whatever its channel is busy with). Once started it is
// not cut off by StopIntake, which waits for it instead: Discord never sends an interaction
// again, so one cancelled halfway would be lost (as on Telegram and Slack, a click or a command
// is handled to its end).
func (x *interactions) goHandle(ix *interactionEvent) {
	x.workers.Go(func(ctx context.Context) {
		st := &ixState{id: ix.ID, token: ix.Token, update: ix.Type == discordgo.InteractionMessageComponent || ix.Message != nil}
		x.handle(context.WithoutCancel(ctx), ix, st)
	})
}

// handle hands an interaction over and makes sure it is answered: a command by its reply
// (handleCommand), a click with "Answer in my own words…" by a modal (openFreeText), anything
// else by the Handler or, once Config.DeferAfter passed or the Handler returned, quietly.
func (x *interactions) handle(ctx context.Context, ix *interactionEvent, st *ixState) {
	var w where
	if ix.GuildID != "" {
		var err error
		if w, err = x.places.locate(ctx, ix.ChannelID, ix.GuildID); err != nil {
			x.cfg.Logger.Warn("discord: cannot tell where an interaction happened; skipping it", "channel", ix.ChannelID, "err", err)
			return
		}
	}
	in, ok := interactionInbound(ix, w, x.clock.Now(), x.cfg.AdminPermission)
	if !ok {
		// Not something this bot handles (another application's command, autocomplete): say so
		// rather than leave Discord's "interaction failed".
		if st.update {
			x.ackQuietly(ctx, st)
		} else if ix.Type != discordgo.InteractionPing && ix.Type != discordgo.InteractionApplicationCommandAutocomplete {
			_ = x.callback(ctx, st, map[string]any{"type": cbMessage, "data": map[string]any{
				"content": "Sorry, I can't do that here.", "flags": flagEphemeral, "allowed_mentions": allowedMentions{Parse: []string{}}}})
		}
		return
	}
	if x.openFreeText(ctx, ix, in, st) {
		return
	}
	if in.Command != "" {
		x.handleCommand(ctx, ix, in, st)
		return
	}
	x.ixs.Store(ix.ID, st)
	defer x.ixs.Delete(ix.ID)
	done := make(chan struct{})
	var timerWG sync.WaitGroup
	timerWG.Add(1)
	go func() {
		defer timerWG.Done()
		t := time.NewTimer(x.cfg.DeferAfter)
		defer t.Stop()
		select {
		case <-t.C:
			x.ackQuietly(ctx, st)
		case <-done:
		}
	}()
	x.dispatcher.handOver(ctx, in)
	close(done)
	timerWG.Wait()
	x.ackQuietly(ctx, st) // every interaction is answered, even when the router said nothing
}

// handleCommand hands a slash command over, acknowledged at once (deferred, "thinking…"), and
// makes sure its response never stays spinning.
func (x *interactions) handleCommand(ctx context.Context, ix *interactionEvent, in channels.Inbound, st *ixState) {
	// A command is answered by the router's reply: acknowledge at once (deferred, "thinking…")
	// and let Send fill the response. Ephemeral, as Slack's slash command replies are: what
	// a command says (help, status, an admin's stats, a refusal — "admins only", "not
	// allowed") is for the one who ran it, and a deferred response keeps the flag it was
	// deferred with, so it cannot be chosen once the router has answered.
	if err := x.callback(ctx, st, map[string]any{"type": cbDeferred, "data": map[string]any{"flags": flagEphemeral}}); err != nil {
		x.cfg.Logger.Warn("discord: acknowledging a slash command failed", "command", in.Command, "err", err)
		return
	}
	cr := &commandReply{token: ix.Token, at: x.clock.Now(), user: in.Identity.ChannelUserID}
	x.replies.pending.Store(ix.ID, cr)
	handed := x.dispatcher.handOver(ctx, in)
	x.replies.pending.Delete(ix.ID)
	cr.mu.Lock()
	used := cr.used
	cr.mu.Unlock()
	if used {
		return
	}
	// Nothing answered: never leave the "thinking…" response spinning. A command the
	// router could not take says so; one it took without a word is removed.
	ep := discordgo.EndpointInteractionResponseActions(x.bot.application(), ix.Token)
	bg := context.WithoutCancel(ctx)
	if !handed {
		failed := editOf(render.DiscordMessage{Content: "Sorry, that failed. Please try again."})
		_ = x.rest.callWaiting(bg, "edit command response", func(opts ...discordgo.RequestOption) error {
			_, err := x.s.RequestWithBucketID("PATCH", ep, failed, tokenBucket("webhook", ix.Token), opts...)
			return err
		})
		return
	}
	_ = x.rest.callWaiting(bg, "delete command response", func(opts ...discordgo.RequestOption) error {
		_, err := x.s.RequestWithBucketID("DELETE", ep, nil, tokenBucket("webhook", ix.Token), opts...)
		return err
	})
}

// ackQuietly makes the interaction's callback when none was made: a deferred update for clicks
// (nothing visible changes), else a deferred response.
func (x *interactions) ackQuietly(ctx context.Context, st *ixState) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.acked {
		return
	}
	if err := x.callbackLocked(ctx, st, quietAck(st)); err != nil && apiCode(err) != codeAlreadyAcked {
		x.cfg.Logger.Debug("discord: acknowledging an interaction failed", "err", err)
	}
}

func (x *interactions) callback(ctx context.Context, st *ixState, body map[string]any) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return x.callbackLocked(ctx, st, body)
}

func (x *interactions) callbackLocked(ctx context.Context, st *ixState, body map[string]any) error {
	if st.httpReply != nil {
		st.httpReply <- body // buffered: the HTTP handler writes it as its response
		st.httpReply, st.acked = nil, true
		return nil
	}
	ep := discordgo.EndpointInteractionResponse(st.id, st.token)
	err := x.rest.callWaiting(ctx, "interaction callback", func(opts ...discordgo.RequestOption) error {
		_, err := x.s.RequestWithBucketID("POST", ep, body, tokenBucket("callback", st.token), opts...)
		return err
	})
	if err == nil || apiCode(err) == codeAlreadyAcked || apiCode(err) == codeUnknownInteraction {
		st.acked = true
	}
	return err
}

func (x *interactions) state(in *channels.Interaction) *ixState {
	if v, ok := x.ixs.Load(in.ID); ok {
		return v.(*ixState)
	}
	return &ixState{id: in.ID, token: in.Token, update: in.Message.ID() != ""}
}

// RespondInteraction answers a click privately: an ephemeral message with notice (cut to one
// message), or, with an empty notice, a silent acknowledgement. When the interaction was already
// acknowledged (deferred after Config.DeferAfter), the notice goes as an ephemeral follow-up.
func (x *interactions) RespondInteraction(ctx context.Context, in *channels.Interaction, notice string) error {
	if in == nil || in.ID == "" || in.Token == "" {
		return errors.New("discord: respond: no interaction id or token")
	}
	if utf8.RuneCountInString(notice) > maxNotice {
		notice = string([]rune(notice)[:maxNotice-1]) + "…"
	}
	st := x.state(in)
	st.mu.Lock()
	defer st.mu.Unlock()
	msg := map[string]any{"content": notice, "flags": flagEphemeral, "allowed_mentions": allowedMentions{Parse: []string{}}}
	if !st.acked {
		if notice == "" {
			return x.callbackLocked(ctx, st, quietAck(st))
		}
		return x.callbackLocked(ctx, st, map[string]any{"type": cbMessage, "data": msg})
	}
	if notice == "" {
		return nil
	}
	ep := discordgo.EndpointFollowupMessage(x.bot.application(), in.Token) + "?wait=true"
	return x.rest.callWaiting(ctx, "interaction follow-up", func(opts ...discordgo.RequestOption) error {
		_, err := x.s.RequestWithBucketID("POST", ep, msg, tokenBucket("webhook", in.Token), opts...)
		return err
	})
}

// OpenForm answers a click with a modal for form (render.DiscordFormModal: a label per field
// wrapping a string select of its options or a text input), each input named by its field's id
// so the submitted values come back by field id — a select's as the signed choices picked, a
// text input's as typed. It must be the interaction's first answer; after a deferral it fails
// and the router asks for a typed answer instead.
func (x *interactions) OpenForm(ctx context.Context, in *channels.Interaction, form render.Form) error {
	if in == nil || in.ID == "" || in.Token == "" {
		return errors.New("discord: open form: no interaction id or token")
	}
	card := render.Card{Title: "Your answer", Status: render.StatusWaiting, Form: &form}
	modal, err := render.DiscordFormModal(card, x.cfg.ActionKey, false)
	if err != nil {
		return fmt.Errorf("discord: open form: %w", err)
	}
	// The router reads a submitted modal's inputs by field id (channels.Interaction.Values):
	// the labels come one per field, in field order, then the free-text one, whose input keeps
	// its signed id.
	for i, f := range form.Fields {
		if i < len(modal.Components) && modal.Components[i].Component != nil && f.ID != "" && len(f.ID) <= render.DiscordMaxCustomID {
			modal.Components[i].Component.CustomID = f.ID
		}
	}
	st := x.state(in)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.acked {
		return errors.New("discord: open form: the interaction was already answered")
	}
	return x.callbackLocked(ctx, st, map[string]any{"type": cbModal, "data": modal})
}

// openFreeText answers a click on "Answer in my own words…" with a modal to type the answer
// in: on Discord a button cannot take text. The modal's submit carries the button's own signed
// id and the typed text, which the router takes as the free-text answer (and checks then: who
// may answer, whether the question is still open). It reports whether it answered the click.
func (x *interactions) openFreeText(ctx context.Context, ix *interactionEvent, in channels.Inbound, st *ixState) bool {
	it := in.Interaction
	if it == nil || ix.Type != discordgo.InteractionMessageComponent || len(it.Values) > 0 {
		return false
	}
	id, err := render.DecodeAction(x.cfg.ActionKey, it.Data)
	if err != nil || id.Kind != render.ActionFreeText {
		return false
	}
	required := true
	modal := render.DiscordModal{Title: "Your answer", CustomID: it.Data, Components: []render.DiscordComponent{
		render.DiscordLabelOf(render.DiscordFreeTextLabel, render.DiscordComponent{Type: render.DiscordTextInput,
			Style: render.DiscordInputParagraph, CustomID: "answer", Required: &required, MaxLength: render.DiscordMaxInputValue})}}
	if err := x.callback(ctx, st, map[string]any{"type": cbModal, "data": modal}); err != nil {
		x.cfg.Logger.Warn("discord: opening the free-text answer failed", "err", err)
		return false // the router then asks for a typed reply
	}
	return true
}

// modalSubmit is a submitted modal's data (Receiving and Responding: "Modal Submit Data
// Structure"): the modal's custom_id and, per component, what was typed or picked. Each input
// comes back wrapped as the modal had it: in a label (type 18; the input is its "component",
// Component Reference: "Label Interaction Response Structure"), or in an action row
// ("components") from a modal of the older kind.
type modalSubmit struct {
	CustomID   string           `json:"custom_id"`
	Components []submittedInput `json:"components"`
}

// submittedInput is a component of a modal submit: a text input's value, a select's values, or
// a label or row around them.
type submittedInput struct {
	Type       int              `json:"type"`
	CustomID   string           `json:"custom_id"`
	Value      json.RawMessage  `json:"value"` // a text input's string (a checkbox's would be a bool)
	Values     []string         `json:"values"`
	Component  *submittedInput  `json:"component"`
	Components []submittedInput `json:"components"`
}

// inputs are the submitted values by custom_id: a text input's text when not empty, a select's
// values (the options picked) when any.
func (m *modalSubmit) inputs() map[string][]string {
	out := map[string][]string{}
	var walk func(cs []submittedInput)
	walk = func(cs []submittedInput) {
		for _, c := range cs {
			switch {
			case c.Component != nil:
				walk([]submittedInput{*c.Component})
			case len(c.Components) > 0:
				walk(c.Components)
			case c.CustomID == "":
			case c.Type == int(discordgo.TextInputComponent):
				var v string
				if json.Unmarshal(c.Value, &v) == nil && v != "" {
					out[c.CustomID] = append(out[c.CustomID], v)
				}
			case len(c.Values) > 0:
				out[c.CustomID] = append(out[c.CustomID], c.Values...)
			}
		}
	}
	walk(m.Components)
	return out
}

// takeModalSubmit takes a modal submit's data out of an INTERACTION_CREATE before discordgo
// decodes it: discordgo v0.29.0 knows no label (type 18), and fails on the data of every modal
// of labels. It returns the event with its data reduced to the custom_id, and the data decoded
// here; any other interaction comes back as it was, with no modalSubmit.
func takeModalSubmit(event []byte) ([]byte, *modalSubmit, error) {
	var probe struct {
		Type discordgo.InteractionType `json:"type"`
	}
	if err := json.Unmarshal(event, &probe); err != nil || probe.Type != discordgo.InteractionModalSubmit {
		return event, nil, nil // discordgo says what is wrong with it
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(event, &fields); err != nil {
		return nil, nil, err
	}
	var m modalSubmit
	if raw, ok := fields["data"]; ok {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, nil, fmt.Errorf("modal submit data: %w", err)
		}
	}
	data, err := json.Marshal(map[string]string{"custom_id": m.CustomID})
	if err != nil {
		return nil, nil, err
	}
	fields["data"] = data
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, nil, err
	}
	return out, &m, nil
}

// tokenBuckets is how many rate-limit buckets interaction calls are spread over. discordgo keeps
// a bucket per key forever; keyed by each interaction's URL (which holds its token) they would
// grow without end.
const tokenBuckets = 64

// tokenBucket is the discordgo bucket of an interaction call: one of tokenBuckets per kind.
func tokenBucket(kind, token string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(token))
	return "switchboard:interaction:" + kind + ":" + strconv.Itoa(int(h.Sum32()%tokenBuckets))
}
