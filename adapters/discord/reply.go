package discord

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/render"
)

// commandReplies sends the replies to slash commands (Send of a reply to one, see
// commandReplyPrefix): in the command's deferred response and its follow-ups while its
// interaction token lasts, privately to the user after (sendLate).
type commandReplies struct {
	cfg     *Config
	rest    *rest
	s       *discordgo.Session
	bot     *botSelf
	out     *sender // posts what a token can no longer carry
	clock   *kit.Clock
	pending sync.Map // interaction id → *commandReply, while its command is handed over
}

// tokenUsable is how long after an interaction its token is used for follow-ups and @original
// edits: Discord takes them for 15 minutes; the minute short of that covers the time the
// interaction took to arrive and the call's own.
const tokenUsable = 14 * time.Minute

// commandReply is a slash command's deferred response, which replies to it fill.
type commandReply struct {
	mu      sync.Mutex
	token   string
	used    bool      // @original edited
	at      time.Time // when the interaction arrived (Config.Now)
	user    string    // who ran the command
	expired bool      // the token is past tokenUsable, or Discord refused it
}

// send answers slash command id with ps: the first piece fills the deferred
// response, the rest are follow-ups. handled is false when the command's token is no longer
// known here (the caller then posts in the channel). Once the token is past tokenUsable, or
// Discord refuses it (401 Invalid Webhook Token, 404 Unknown Webhook: nothing was posted), the
// pieces not sent yet go to the user privately instead (sendLate), so none is lost or doubled.
// A 429 of the first piece is returned (delivery sends again); of a later one, waited out.
func (r *commandReplies) send(ctx context.Context, id string, to channels.Target, ps []render.DiscordMessage, key string) (channels.MessageRef, bool, error) {
	v, ok := r.pending.Load(id)
	if !ok {
		return channels.MessageRef{}, false, nil
	}
	cr := v.(*commandReply)
	cr.mu.Lock()
	defer cr.mu.Unlock()
	ref := channels.MessageRef{Conv: to.Conv}
	app := r.bot.application()
	if !cr.expired && r.clock.Now().Sub(cr.at) >= tokenUsable {
		cr.expired = true
	}
	for i, p := range ps {
		if cr.expired {
			return r.sendLate(ctx, cr, to, ps, i, key, ref)
		}
		var raw []byte
		var err error
		if !cr.used {
			ep := discordgo.EndpointInteractionResponseActions(app, cr.token)
			body := editOf(p)
			if p.V2() {
				// The deferred response was ephemeral; a V2 piece sets the flag on it (a deferral
				// cannot: Receiving and Responding), and an edit that sets flags names all it keeps.
				body.Flags |= flagEphemeral
			}
			err = r.rest.callMaybeWaiting(ctx, i > 0, "edit command response", func(opts ...discordgo.RequestOption) error {
				raw, err = r.s.RequestWithBucketID("PATCH", ep, body, tokenBucket("webhook", cr.token), opts...)
				return err
			})
		} else {
			ep := discordgo.EndpointFollowupMessage(app, cr.token) + "?wait=true"
			// Ephemeral like the deferred response it continues.
			body := createOf(p, "")
			body.Flags |= flagEphemeral
			err = r.rest.callMaybeWaiting(ctx, i > 0, "command follow-up", func(opts ...discordgo.RequestOption) error {
				raw, err = r.s.RequestWithBucketID("POST", ep, body, tokenBucket("webhook", cr.token), opts...)
				return err
			})
		}
		if tokenGone(err) {
			cr.expired = true
			return r.sendLate(ctx, cr, to, ps, i, key, ref)
		}
		if err != nil {
			return ref, true, err
		}
		cr.used = true
		var s sent
		if json.Unmarshal(raw, &s) == nil && s.ID != "" {
			ref.IDs = append(ref.IDs, s.ID)
		}
	}
	return ref, true, nil
}

// tokenGone reports whether Discord refused an interaction token: 401 (Invalid Webhook Token,
// past its 15 minutes) or 404 Unknown Webhook.
func tokenGone(err error) bool {
	return err != nil && (apiStatus(err) == http.StatusUnauthorized || apiCode(err) == codeUnknownWebhook)
}

// sendLate posts ps[from:] — a command's reply its interaction token can no longer carry — to
// the user who ran the command, privately as the response would have been: in the DM the
// command came from, else in a DM the bot opens with them. ref gains the messages posted.
func (r *commandReplies) sendLate(ctx context.Context, cr *commandReply, to channels.Target, ps []render.DiscordMessage, from int, key string, ref channels.MessageRef) (channels.MessageRef, bool, error) {
	chID := to.Conv.Chat
	if to.Conv.Workspace != "" {
		if cr.user == "" {
			return ref, true, errors.New("discord: a command's reply outlived its interaction and its user is unknown")
		}
		err := r.rest.callMaybeWaiting(ctx, from > 0, "open DM", func(opts ...discordgo.RequestOption) error {
			ch, err := r.s.UserChannelCreate(cr.user, opts...)
			if err == nil {
				chID = ch.ID
			}
			return err
		})
		if err != nil {
			return ref, true, err
		}
	}
	r.cfg.Logger.Info("discord: a slash command's reply outlived its interaction token; sending it to the user's DM",
		"conv", to.Conv.String(), "pieces", len(ps)-from)
	for i := from; i < len(ps); i++ {
		p := ps[i]
		id, err := r.out.post(ctx, i > 0, chID, createOf(p, nonceFor(key, i)))
		if err != nil {
			return ref, true, err
		}
		ref.IDs = append(ref.IDs, id)
	}
	return ref, true, nil
}
