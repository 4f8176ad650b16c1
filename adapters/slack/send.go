package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/render"
)

// Slack's limits this adapter splits to.
const (
	MaxSectionText = render.SlackMaxSectionText // characters of one section's text
	MaxBlocks      = render.SlackMaxBlocks      // blocks of one message
	MaxText        = 40000                      // characters of a message's text
	// textSections is how many full sections one text message carries: its fallback text is
	// the same content, which must stay within MaxText.
	textSections = MaxText/MaxSectionText - 1
)

// sender posts, edits and deletes messages (Send, Edit, Delete), finds the ones a replay asks
// for (FindSent) and shares files (SendFile, file.go), with the token of each conversation's
// workspace; a run's final message clears its thread's status.
type sender struct {
	cfg      *Config
	web      *webAPI
	installs *installs
	clock    *kit.Clock
	pages    kit.Pages[piece]
	pacer    *pacer
	status   *threadStatuses
	edits    sync.Map // channel/ts → *atomic.Int64: the generation of the message's latest edit
}

// piece is one Slack message of a rendered channels.Message.
type piece struct {
	text   string // the notification / fallback text (mrkdwn)
	blocks []slackgo.Block
	final  bool // the run is no longer working: the thread's status is cleared after it
	// key, index and of name the piece in its message's metadata (sentMetadata) when the
	// message has a key (channels.Message.Key): piece index of of.
	key       string
	index, of int
}

// block passes a block rendered by render to slack-go as it is: it marshals as render's block,
// in the one pass that encodes the whole request.
type block struct{ render.SlackBlock }

func (b block) BlockType() slackgo.MessageBlockType { return slackgo.MessageBlockType(b.Type) }
func (b block) ID() string                          { return "" }

func blocks(bs []render.SlackBlock) []slackgo.Block {
	out := make([]slackgo.Block, len(bs))
	for i, b := range bs {
		out[i] = block{b}
	}
	return out
}

// renderPieces renders m: a card with render.Slack (already split at 50 blocks and 3,000
// characters a section), or markdown text converted to mrkdwn and split into sections,
// textSections to a message, each message's fallback text its full content. Nothing is cut. An
// invalid card is channels.ErrCardRefused, so delivery falls back to text.
func renderPieces(m channels.Message, key render.Key) ([]piece, error) {
	if m.Card != nil {
		msgs, err := render.Slack(*m.Card, key)
		if err != nil {
			return nil, fmt.Errorf("slack: render card: %w: %w", channels.ErrCardRefused, err)
		}
		out := make([]piece, 0, len(msgs))
		for _, msg := range msgs {
			out = append(out, piece{text: msg.Text, blocks: blocks(msg.Blocks), final: m.Card.Status != render.StatusWorking})
		}
		return out, nil
	}
	chunks := render.Chunk(render.ConvertMarkdown(m.Text, render.DialectSlack), MaxSectionText, render.DialectSlack)
	if len(chunks) == 0 {
		return nil, errors.New("slack: empty message")
	}
	var out []piece
	for start := 0; start < len(chunks); start += textSections {
		part := chunks[start:min(len(chunks), start+textSections)]
		secs := make([]render.SlackBlock, len(part))
		for i, ch := range part {
			secs[i] = render.SlackBlock{Type: "section", Text: &render.SlackText{Type: "mrkdwn", Text: ch}}
		}
		out = append(out, piece{text: strings.Join(part, "\n\n"), blocks: blocks(secs), final: true})
	}
	return out, nil
}

// msgOptions are a piece's content for chat.update and chat.postEphemeral (in thread, when
// set): its text and blocks. Neither method takes unfurl_links or unfurl_media — those are
// chat.postMessage's (postMessageBody): an edited message keeps its unfurls, an ephemeral one
// is never unfurled. https://docs.slack.dev/reference/methods/chat.update,
// https://docs.slack.dev/reference/methods/chat.postEphemeral
func msgOptions(p piece, thread string) []slackgo.MsgOption {
	opts := []slackgo.MsgOption{
		slackgo.MsgOptionText(p.text, false),
		slackgo.MsgOptionBlocks(p.blocks...),
	}
	if thread != "" {
		opts = append(opts, slackgo.MsgOptionTS(thread))
	}
	return opts
}

// Send posts m to the conversation, in its thread when Conv.Thread is set. A reply to a slash
// command (to.ReplyTo names its user, see slashInbound) goes to that user only, with
// chat.postEphemeral. The ref lists every message posted; on error it lists those posted
// before the error. A 429 of the first piece is returned for delivery to wait out; one of a
// later piece is waited out here, as sending again would post the first twice (see call).
func (s *sender) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	ref := channels.MessageRef{Conv: to.Conv}
	if to.Conv.Chat == "" {
		return ref, errors.New("slack: send: no channel")
	}
	ps, err := s.pages.Pieces(m)
	if err != nil {
		return ref, err
	}
	if user, ok := strings.CutPrefix(to.ReplyTo, ephemeralPrefix); ok && user != "" {
		for i, p := range ps {
			if err := s.ephemeral(ctx, i > 0, to.Conv.Workspace, to.Conv.Chat, user, to.Conv.Thread, p); err != nil {
				return ref, err
			}
		}
		return ref, nil
	}
	for i, p := range ps {
		if m.Key != "" {
			p.key, p.index, p.of = m.Key, i, len(ps)
		}
		ts, err := s.post(ctx, i > 0, to.Conv, p)
		if err != nil {
			if ps[len(ps)-1].final {
				s.status.clearAnyway(ctx, to.Conv, to.ReplyTo)
			}
			return ref, err
		}
		ref.IDs = append(ref.IDs, ts)
	}
	if ps[len(ps)-1].final {
		s.status.clear(ctx, to.Conv, to.ReplyTo)
	} else {
		s.status.posted(to.Conv)
	}
	return ref, nil
}

// sentEventType is the metadata event type of a message sent with a key: its payload holds
// the key and which piece of how many the message is, so FindSent can find it again.
const sentEventType = "switchboard_sent"

// sentLookback is how many of a conversation's latest messages FindSent reads (one page).
const sentLookback = 200

// FindSent finds the message sent with key (channels.Message.Key) at since or later: every
// piece of it, in order, read back from the conversation's history (its thread's replies when
// Conv.Thread is set) with the messages' metadata. found is false when a piece is missing.
func (s *sender) FindSent(ctx context.Context, to channels.Target, key string, since time.Time) (channels.MessageRef, bool, error) {
	ref := channels.MessageRef{Conv: to.Conv}
	if key == "" || to.Conv.Chat == "" || strings.HasPrefix(to.ReplyTo, ephemeralPrefix) {
		return ref, false, nil
	}
	api, err := s.installs.client(ctx, to.Conv.Workspace)
	if err != nil {
		return ref, false, err
	}
	oldest := fmt.Sprintf("%d.%06d", since.Unix(), since.Nanosecond()/1000)
	var msgs []slackgo.Message
	if to.Conv.Thread != "" {
		err = s.web.callWaiting(ctx, to.Conv.Workspace, "conversations.replies", func(ctx context.Context) error {
			var err error
			msgs, _, _, err = api.GetConversationRepliesContext(ctx, &slackgo.GetConversationRepliesParameters{
				ChannelID: to.Conv.Chat, Timestamp: to.Conv.Thread, Oldest: oldest, Limit: sentLookback, IncludeAllMetadata: true})
			return err
		})
	} else {
		err = s.web.callWaiting(ctx, to.Conv.Workspace, "conversations.history", func(ctx context.Context) error {
			resp, err := api.GetConversationHistoryContext(ctx, &slackgo.GetConversationHistoryParameters{
				ChannelID: to.Conv.Chat, Oldest: oldest, Limit: sentLookback, IncludeAllMetadata: true})
			if resp != nil {
				msgs = resp.Messages
			}
			return err
		})
	}
	if err != nil {
		return ref, false, fmt.Errorf("slack: find sent message: %w", err)
	}
	pieces, of := map[int]string{}, 0
	for _, m := range msgs {
		md := m.Metadata
		if md.EventType != sentEventType || md.EventPayload["key"] != key {
			continue
		}
		i, iok := md.EventPayload["piece"].(float64)
		n, nok := md.EventPayload["of"].(float64)
		if !iok || !nok || n < 1 || i < 0 || i >= n {
			continue
		}
		pieces[int(i)], of = m.Timestamp, int(n)
	}
	if of == 0 || len(pieces) != of {
		return ref, false, nil
	}
	for i := range of {
		if pieces[i] == "" {
			return channels.MessageRef{Conv: to.Conv}, false, nil
		}
		ref.IDs = append(ref.IDs, pieces[i])
	}
	return ref, true, nil
}

// post posts one piece with chat.postMessage; wait says a 429 is waited out here (a later piece
// of a message) rather than returned.
func (s *sender) post(ctx context.Context, wait bool, k conv.Key, p piece) (string, error) {
	if s.cfg.Pacing {
		if err := s.clock.Sleep(ctx, s.pacer.reserve(k.Chat, s.clock.Now())); err != nil {
			return "", fmt.Errorf("slack: send: %w", err)
		}
	}
	token, err := s.installs.token(ctx, k.Workspace)
	if err != nil {
		return "", err
	}
	var ts string
	err = s.web.callMaybeWaiting(ctx, wait, k.Workspace, "chat.postMessage", func(ctx context.Context) error {
		var err error
		ts, err = s.web.postMessage(ctx, token, k.Chat, k.Thread, p)
		return err
	})
	return ts, err
}

func (s *sender) ephemeral(ctx context.Context, wait bool, workspace, channel, user, thread string, p piece) error {
	api, err := s.installs.client(ctx, workspace)
	if err != nil {
		return err
	}
	return s.web.callMaybeWaiting(ctx, wait, workspace, "chat.postEphemeral", func(ctx context.Context) error {
		_, err := api.PostEphemeralContext(ctx, channel, user, msgOptions(p, thread)...)
		return err
	})
}

// Edit replaces the message ref names with m (chat.update): the first piece edits ref's first
// message, further pieces edit ref's further messages or are posted as new ones (in the
// thread), and messages of ref beyond the pieces are deleted. A message that no longer exists
// is channels.ErrMessageGone (delivery then posts anew). A 429 is returned for delivery to wait
// out (but for the pieces posted after a new one, see Send). Paced edits coalesce: an edit
// waiting for its tier's budget when a newer edit of the same message comes gives up,
// returning ref and no error, so the latest content wins and no stale edit is made after it.
func (s *sender) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) (_ channels.MessageRef, err error) {
	if ref.ID() == "" || ref.Conv.Chat == "" {
		return ref, fmt.Errorf("slack: edit: %w: empty message ref", channels.ErrMessageGone)
	}
	ps, err := s.pages.Pieces(m)
	if err != nil {
		return ref, err
	}
	if ps[len(ps)-1].final {
		defer func() {
			if err != nil {
				s.status.clearAnyway(ctx, ref.Conv, "")
			}
		}()
	}
	api, err := s.installs.client(ctx, ref.Conv.Workspace)
	if err != nil {
		return ref, err
	}
	key := ref.Conv.Chat + "/" + ref.ID()
	v, _ := s.edits.LoadOrStore(key, new(atomic.Int64))
	gen := v.(*atomic.Int64)
	mine := gen.Add(1)
	defer func() {
		if gen.Load() == mine {
			s.edits.CompareAndDelete(key, gen)
		}
	}()
	superseded := func() bool { return gen.Load() != mine }
	out := channels.MessageRef{Conv: ref.Conv}
	for i, p := range ps {
		if i < len(ref.IDs) {
			id := ref.IDs[i]
			err := s.web.limits.Pass("chat.update", s.web.request(ctx, ref.Conv.Workspace, "chat.update", superseded, func(ctx context.Context) error {
				_, _, _, err := api.UpdateMessageContext(ctx, ref.Conv.Chat, id, msgOptions(p, "")...)
				return err
			}))
			if errors.Is(err, errSuperseded) {
				return ref, nil
			}
			if err != nil {
				return ref, err
			}
			out.IDs = append(out.IDs, id)
			continue
		}
		// Edits are safe to make again; a piece posted anew is not (see Send).
		ts, err := s.post(ctx, len(out.IDs) > len(ref.IDs), ref.Conv, p)
		if err != nil {
			return out, err
		}
		out.IDs = append(out.IDs, ts)
	}
	for _, id := range ref.IDs[min(len(ps), len(ref.IDs)):] {
		if err := s.deleteOne(ctx, ref.Conv.Workspace, ref.Conv.Chat, id); err != nil {
			return out, err
		}
	}
	if ps[len(ps)-1].final {
		s.status.clear(ctx, ref.Conv, "")
	}
	return out, nil
}

// Delete deletes every message of ref. A message already gone counts as deleted.
func (s *sender) Delete(ctx context.Context, ref channels.MessageRef) error {
	for _, id := range ref.IDs {
		if err := s.deleteOne(ctx, ref.Conv.Workspace, ref.Conv.Chat, id); err != nil {
			return err
		}
	}
	return nil
}

func (s *sender) deleteOne(ctx context.Context, workspace, channel, ts string) error {
	api, err := s.installs.client(ctx, workspace)
	if err != nil {
		return err
	}
	err = s.web.call(ctx, workspace, "chat.delete", func(ctx context.Context) error {
		_, _, err := api.DeleteMessageContext(ctx, channel, ts)
		return err
	})
	if errors.Is(err, channels.ErrMessageGone) {
		return nil
	}
	return err
}
