package discord

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/render"
)

// MaxContent is the longest message content Discord accepts; Send splits longer text.
const MaxContent = render.DiscordMaxContent

// sender posts, edits and deletes messages (Send, Edit, Delete) and files (SendFile, file.go)
// in the conversation's channel or thread (threads); a reply to a slash command goes through
// replies (reply.go).
type sender struct {
	cfg     *Config
	rest    *rest
	s       *discordgo.Session
	pages   kit.Pages[render.DiscordMessage]
	threads *threadMaker
	signals *kit.TypingSignals // a message sent ends the channel's "typing…"
	replies *commandReplies
}

// allowedMentions parses nothing, so no text the model writes (@everyone, <@id>, <@&role>)
// pings anyone; RepliedUser pings the asker of a reply.
type allowedMentions struct {
	Parse       []string `json:"parse"`
	RepliedUser bool     `json:"replied_user"`
}

type messageReference struct {
	MessageID       string `json:"message_id"`
	FailIfNotExists bool   `json:"fail_if_not_exists"`
}

// createBody is POST /channels/{id}/messages (and interaction follow-ups). A Components V2
// piece sets Flags to render.DiscordFlagComponentsV2 and has no content or embeds, which Discord
// refuses beside that flag.
type createBody struct {
	Content          string                    `json:"content,omitempty"`
	Embeds           []render.DiscordEmbed     `json:"embeds,omitempty"`
	Components       []render.DiscordComponent `json:"components,omitempty"`
	AllowedMentions  allowedMentions           `json:"allowed_mentions"`
	MessageReference *messageReference         `json:"message_reference,omitempty"`
	Nonce            string                    `json:"nonce,omitempty"`
	EnforceNonce     bool                      `json:"enforce_nonce,omitempty"`
	Flags            int                       `json:"flags,omitempty"`
}

// editBody is PATCH of a message: every part is sent, so an edit from a card to text clears
// the embeds and components. A Components V2 piece sends content null, embeds [] and the flag:
// Edit Message takes IS_COMPONENTS_V2 on a message of content or embeds only with content reset
// to null and embeds to [], and a message that has the flag keeps it (see Edit).
type editBody struct {
	Content         *string                   `json:"content"`
	Embeds          []render.DiscordEmbed     `json:"embeds"`
	Components      []render.DiscordComponent `json:"components"`
	AllowedMentions allowedMentions           `json:"allowed_mentions"`
	Flags           int                       `json:"flags,omitempty"`
}

func editOf(p render.DiscordMessage) editBody {
	e := editBody{Embeds: p.Embeds, Components: p.Components, AllowedMentions: allowedMentions{Parse: []string{}}, Flags: p.Flags}
	if !p.V2() {
		e.Content = &p.Content
	}
	if e.Embeds == nil {
		e.Embeds = []render.DiscordEmbed{}
	}
	if e.Components == nil {
		e.Components = []render.DiscordComponent{}
	}
	return e
}

// createOf is the body that posts piece p.
func createOf(p render.DiscordMessage, nonce string) createBody {
	b := createBody{Content: p.Content, Embeds: p.Embeds, Components: p.Components, AllowedMentions: allowedMentions{Parse: []string{}},
		Flags: p.Flags}
	if nonce != "" {
		b.Nonce, b.EnforceNonce = nonce, true
	}
	return b
}

// renderPieces renders m for a new message (or an edit of one that is not a Components V2
// message):
//
//   - A card that fits one Components V2 message (render.DiscordV2: 4,000 characters of text, 40
//     components) is that message: the answer, subagent results, failures, clarification and
//     approval forms.
//   - A longer card keeps embeds (render.Discord: 6,000 characters a message, 10 embeds, rows on
//     the last), so a long answer splits as before and in fewer messages than V2's 4,000
//     characters a message would need (delivery bounds an answer's messages, channels.Pager).
//   - A working card — the placeholder — keeps embeds too: the closing message is edited into
//     it, and Discord turns a message of embeds into a V2 one by an edit but never a V2 one back
//     (render.DiscordFlagComponentsV2), while the closing card may be a long answer of embeds.
//   - Text is content, split at 2,000 characters with code blocks kept whole (an edit of a V2
//     message shows it in text displays instead: see Edit).
//
// An invalid card is ErrCardRefused.
func renderPieces(m channels.Message, key render.Key) ([]render.DiscordMessage, error) {
	if m.Card != nil {
		if m.Card.Status != render.StatusWorking && !tooLongForV2(*m.Card) {
			if msgs, err := render.DiscordV2(*m.Card, key); err == nil && len(msgs) == 1 {
				return msgs, nil
			}
		}
		msgs, err := render.Discord(*m.Card, key)
		if err != nil {
			return nil, fmt.Errorf("discord: render card: %w: %w", channels.ErrCardRefused, err)
		}
		return msgs, nil
	}
	chunks := splitContent(render.ConvertMarkdown(m.Text, render.DialectDiscord), MaxContent)
	if len(chunks) == 0 {
		return nil, errors.New("discord: empty message")
	}
	out := make([]render.DiscordMessage, len(chunks))
	for i, ch := range chunks {
		out[i] = render.DiscordMessage{Content: ch, AllowedMentions: render.DiscordAllowedMentions{Parse: []string{}}}
	}
	return out, nil
}

// tooLongForV2 reports, without rendering, a card whose text is far past what one Components V2
// message shows (twice render.DiscordMaxV2Text): it is rendered as embeds at once.
func tooLongForV2(c render.Card) bool {
	n := render.Width(c.Body)
	for _, sa := range c.Subagents {
		n += render.Width(sa.Summary)
		for _, f := range sa.Structured {
			n += render.Width(f.Value)
		}
	}
	for _, f := range c.Fields {
		n += render.Width(f.Value)
	}
	return n > 2*render.DiscordMaxV2Text
}

// renderV2Pieces renders m as Components V2 messages only — a card with render.DiscordV2, split
// as it needs, text with render.DiscordV2Text — for an edit of a message that already is a V2
// one. An invalid card is ErrCardRefused.
func renderV2Pieces(m channels.Message, key render.Key) ([]render.DiscordMessage, error) {
	if m.Card != nil {
		msgs, err := render.DiscordV2(*m.Card, key)
		if err != nil {
			return nil, fmt.Errorf("discord: render card: %w: %w", channels.ErrCardRefused, err)
		}
		return msgs, nil
	}
	msgs := render.DiscordV2Text(m.Text)
	if len(msgs) == 0 {
		return nil, errors.New("discord: empty message")
	}
	return msgs, nil
}

// splitContent cuts text into pieces of at most limit characters at segment boundaries: a
// fenced code block is one segment and goes whole into one piece when it fits in one; only a
// block or paragraph run longer than limit is cut by render.Chunk (which closes and reopens the
// fence).
func splitContent(text string, limit int) []string {
	var segs []string
	var cur []string
	inFence := false
	flush := func() {
		if len(cur) > 0 {
			segs = append(segs, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	for _, line := range strings.Split(text, "\n") {
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		if fence && !inFence {
			flush()
			inFence = true
			cur = append(cur, line)
			if strings.Count(strings.TrimSpace(line), "```") >= 2 && len(strings.TrimSpace(line)) > 6 {
				inFence = false // ```one-liner```
				flush()
			}
			continue
		}
		cur = append(cur, line)
		if fence && inFence {
			inFence = false
			flush()
		}
	}
	flush()

	var out []string
	piece := ""
	emit := func() {
		if strings.TrimSpace(piece) != "" {
			out = append(out, strings.Trim(piece, "\n"))
		}
		piece = ""
	}
	for _, s := range segs {
		if strings.TrimSpace(s) == "" {
			if piece != "" {
				piece += "\n"
			}
			continue
		}
		joined := s
		if piece != "" {
			joined = piece + "\n" + s
		}
		if render.Width(joined) <= limit {
			piece = joined
			continue
		}
		emit()
		if render.Width(s) <= limit {
			piece = s
			continue
		}
		parts := render.Chunk(s, limit, render.DialectDiscord)
		for i, p := range parts {
			if i == len(parts)-1 {
				piece = p
				break
			}
			out = append(out, p)
		}
	}
	emit()
	return out
}

func newNonce() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b) // 24 characters; Discord allows 25
}

// nonceWindow is how long Discord is taken to remember an enforced nonce: it documents "a few
// minutes"; a replay later than this is counted as a possible double.
const nonceWindow = 2 * time.Minute

// KeyWindow says Send is idempotent per channels.Message.Key (through the nonce) for
// nonceWindow. A reply to a slash command answers its interaction instead and carries no nonce.
func (s *sender) KeyWindow() time.Duration { return nonceWindow }

// nonceFor is piece i's nonce: derived from the message's key (channels.Message.Key: its run and
// step) when it has one, so the same piece sent again by a later attempt of the run — after a
// crash or a hand-back that left it posted but unrecorded — returns the message Discord already
// made instead of posting it twice; random otherwise.
func nonceFor(key string, i int) string {
	if key == "" {
		return newNonce()
	}
	sum := sha256.Sum256([]byte(key + "#" + strconv.Itoa(i)))
	return hex.EncodeToString(sum[:12])
}

// Send posts m to the conversation: in its thread (started from the message the conversation
// is keyed by, on first use), as a reply to to.ReplyTo on the first piece when that message is
// in the same channel, split to Discord's limits with components on the last piece. Each piece
// carries a nonce with enforce_nonce, so a retry after a lost answer returns the message already
// made instead of posting twice. A reply to a slash command answers its interaction. The ref
// lists every message sent; on error those sent before it. A 429 of the first piece is returned
// for delivery to wait out; one of a later piece is waited out here (see call).
func (s *sender) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	ref := channels.MessageRef{Conv: to.Conv}
	ps, err := s.pages.Pieces(m)
	if err != nil {
		return ref, err
	}
	if id, ok := strings.CutPrefix(to.ReplyTo, commandReplyPrefix); ok {
		if out, handled, err := s.replies.send(ctx, id, to, ps, m.Key); handled {
			return out, cardRefused(m, err)
		}
		to.ReplyTo = ""
	}
	chID, err := s.threads.channelFor(ctx, to.Conv)
	if err != nil {
		return ref, err
	}
	for i, p := range ps {
		body := createOf(p, nonceFor(m.Key, i))
		// The message a thread starts from is in the parent channel: a reply from inside the
		// thread cannot reference it (the thread shows it anyway).
		inItsThread := to.ReplyTo == to.Conv.Thread && chID == to.Conv.Thread
		if i == 0 && to.ReplyTo != "" && !inItsThread && !strings.Contains(to.ReplyTo, ":") {
			body.MessageReference = &messageReference{MessageID: to.ReplyTo}
			body.AllowedMentions.RepliedUser = true
		}
		id, err := s.post(ctx, i > 0, chID, body)
		if err != nil {
			return ref, cardRefused(m, err)
		}
		if i == 0 {
			s.signals.Sent(to.Conv.String()) // Discord's "typing…" ends with a message
		}
		ref.IDs = append(ref.IDs, id)
	}
	return ref, nil
}

// cardRefused marks Discord's refusal of a card's form body as channels.ErrCardRefused, so
// delivery falls back to text.
func cardRefused(m channels.Message, err error) error {
	if err != nil && m.Card != nil && apiCode(err) == codeInvalidFormBody && !errors.Is(err, channels.ErrCardRefused) {
		return fmt.Errorf("%w: %w", channels.ErrCardRefused, err)
	}
	return err
}

type sent struct {
	ID string `json:"id"`
}

// sentID reads the id of the message Discord answered with ("" when there is none or it is
// unreadable).
func sentID(raw []byte) string {
	var s sent
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s.ID
}

// post posts a message to channel chID (see create).
func (s *sender) post(ctx context.Context, wait bool, chID string, body createBody) (string, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("discord: send message: %w", err)
	}
	return s.create(ctx, wait, "send message", chID, "application/json", b)
}

// create posts a new message to channel chID — body is its JSON, or a multipart form with the
// JSON as payload_json and files — and returns the message's id; what names the call in errors
// and metrics. wait says a 429 is waited out here (a later piece of a message) rather than
// returned.
func (s *sender) create(ctx context.Context, wait bool, what, chID, contentType string, body []byte) (string, error) {
	ep := discordgo.EndpointChannelMessages(chID)
	var raw []byte
	err := s.rest.callMaybeWaiting(ctx, wait, what, func(opts ...discordgo.RequestOption) error {
		var err error
		raw, err = s.s.RequestRaw("POST", ep, contentType, body, ep, 0, opts...)
		return err
	})
	if err != nil {
		return "", err
	}
	id := sentID(raw)
	if id == "" {
		return "", fmt.Errorf("discord: %s: unreadable answer", what)
	}
	return id, nil
}

// Edit replaces the message ref names with m. The first piece edits ref's first message;
// further pieces edit ref's further messages or are sent as new ones; messages of ref beyond the
// pieces are deleted. A message that no longer exists is channels.ErrMessageGone (delivery then
// sends anew).
//
// A Components V2 message stays one (Discord: the flag "can't be removed from that message"),
// and never again takes content or embeds. m is rendered as for a new message (renderPieces);
// when Discord refuses the edit of a piece of content or embeds as an invalid form body, the
// message is taken to be a V2 one — a card of embeds, or text, edited into a card that went out
// as V2 — and m is edited in again rendered as V2 only (renderV2Pieces: a card split as it
// needs, text in text displays). A refusal of that is returned. Edits are safe to make again,
// and a refusal comes before any piece is posted anew.
func (s *sender) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) (channels.MessageRef, error) {
	if ref.ID() == "" {
		return ref, fmt.Errorf("discord: edit: %w: empty message ref", channels.ErrMessageGone)
	}
	ps, err := s.pages.Pieces(m)
	if err != nil {
		return ref, err
	}
	chID, err := s.threads.channelFor(ctx, ref.Conv)
	if err != nil {
		return ref, err
	}
	out, refused, err := s.editPieces(ctx, chID, ref, ps, m.Key)
	if refused {
		vs, verr := renderV2Pieces(m, s.cfg.ActionKey)
		if verr != nil {
			return ref, cardRefused(m, err)
		}
		s.cfg.Logger.Debug("discord: the message is a Components V2 one; editing it in again as V2", "message", ref.ID(), "err", err)
		out, _, err = s.editPieces(ctx, chID, ref, vs, m.Key)
	}
	if err != nil {
		return out, cardRefused(m, err)
	}
	return out, nil
}

// editPieces edits ref's messages in channel chID into ps (see Edit). refused reports that the
// edit of a piece of content or embeds was refused as an invalid form body: nothing was posted.
func (s *sender) editPieces(ctx context.Context, chID string, ref channels.MessageRef, ps []render.DiscordMessage, key string) (channels.MessageRef, bool, error) {
	out := channels.MessageRef{Conv: ref.Conv}
	for i, p := range ps {
		if i < len(ref.IDs) {
			ep := discordgo.EndpointChannelMessage(chID, ref.IDs[i])
			err := s.rest.call(ctx, "edit message", func(opts ...discordgo.RequestOption) error {
				_, err := s.s.RequestWithBucketID("PATCH", ep, editOf(p), discordgo.EndpointChannelMessages(chID), opts...)
				return err
			})
			if err != nil {
				return ref, !p.V2() && apiCode(err) == codeInvalidFormBody, err
			}
			out.IDs = append(out.IDs, ref.IDs[i])
			continue
		}
		// Edits are safe to make again; a piece posted anew is not (see Send).
		id, err := s.post(ctx, len(out.IDs) > len(ref.IDs), chID, createOf(p, nonceFor(key, i)))
		if err != nil {
			return out, false, err
		}
		out.IDs = append(out.IDs, id)
	}
	for _, id := range ref.IDs[min(len(ps), len(ref.IDs)):] {
		if err := s.deleteOne(ctx, chID, id); err != nil {
			return out, false, err
		}
	}
	return out, false, nil
}

// Delete deletes every message of ref. A message already gone counts as deleted.
func (s *sender) Delete(ctx context.Context, ref channels.MessageRef) error {
	chID, err := s.threads.channelFor(ctx, ref.Conv)
	if err != nil {
		return err
	}
	for _, id := range ref.IDs {
		if err := s.deleteOne(ctx, chID, id); err != nil {
			return err
		}
	}
	return nil
}

func (s *sender) deleteOne(ctx context.Context, chID, id string) error {
	err := s.rest.call(ctx, "delete message", func(opts ...discordgo.RequestOption) error {
		return s.s.ChannelMessageDelete(chID, id, opts...)
	})
	if errors.Is(err, channels.ErrMessageGone) {
		return nil
	}
	return err
}
