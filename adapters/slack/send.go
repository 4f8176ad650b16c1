package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
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

// pieces renders m: a card with render.Slack (already split at 50 blocks and 3,000 characters a
// section), or markdown text converted to mrkdwn and split into sections, textSections to a
// message, each message's fallback text its full content. Nothing is cut. An invalid card is
// channels.ErrCardRefused, so delivery falls back to text.
func (c *Channel) pieces(m channels.Message) ([]piece, error) {
	if m.Card != nil {
		if ps, ok := c.rendered.Take(m.Card); ok {
			return ps, nil
		}
		msgs, err := render.Slack(*m.Card, c.cfg.ActionKey)
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

func msgOptions(p piece, thread string) []slackgo.MsgOption {
	opts := []slackgo.MsgOption{
		slackgo.MsgOptionText(p.text, false),
		slackgo.MsgOptionBlocks(p.blocks...),
		slackgo.MsgOptionDisableLinkUnfurl(),
		slackgo.MsgOptionDisableMediaUnfurl(),
	}
	if thread != "" {
		opts = append(opts, slackgo.MsgOptionTS(thread))
	}
	return opts
}

// Send posts m to the conversation, in its thread when Conv.Thread is set. A reply to a slash
// command (to.ReplyTo names its user, see slashInbound) goes to that user only, with
// chat.postEphemeral. The ref lists every message posted; on error it lists those posted
// before the error.
func (c *Channel) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	ref := channels.MessageRef{Conv: to.Conv}
	if to.Conv.Chat == "" {
		return ref, errors.New("slack: send: no channel")
	}
	ps, err := c.pieces(m)
	if err != nil {
		return ref, err
	}
	if user, ok := strings.CutPrefix(to.ReplyTo, ephemeralPrefix); ok && user != "" {
		for _, p := range ps {
			if err := c.ephemeral(ctx, to.Conv.Workspace, to.Conv.Chat, user, to.Conv.Thread, p); err != nil {
				return ref, err
			}
		}
		return ref, nil
	}
	for i, p := range ps {
		if m.Key != "" {
			p.key, p.index, p.of = m.Key, i, len(ps)
		}
		ts, err := c.post(ctx, to.Conv, p)
		if err != nil {
			if ps[len(ps)-1].final {
				c.clearStatusAnyway(ctx, to.Conv, to.ReplyTo)
			}
			return ref, err
		}
		ref.IDs = append(ref.IDs, ts)
	}
	if ps[len(ps)-1].final {
		c.clearStatus(ctx, to.Conv, to.ReplyTo)
	} else {
		c.notePosted(to.Conv)
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
func (c *Channel) FindSent(ctx context.Context, to channels.Target, key string, since time.Time) (channels.MessageRef, bool, error) {
	ref := channels.MessageRef{Conv: to.Conv}
	if key == "" || to.Conv.Chat == "" || strings.HasPrefix(to.ReplyTo, ephemeralPrefix) {
		return ref, false, nil
	}
	api, err := c.client(ctx, to.Conv.Workspace)
	if err != nil {
		return ref, false, err
	}
	oldest := fmt.Sprintf("%d.%06d", since.Unix(), since.Nanosecond()/1000)
	var msgs []slackgo.Message
	if to.Conv.Thread != "" {
		err = c.call(ctx, to.Conv.Workspace, "conversations.replies", func(ctx context.Context) error {
			var err error
			msgs, _, _, err = api.GetConversationRepliesContext(ctx, &slackgo.GetConversationRepliesParameters{
				ChannelID: to.Conv.Chat, Timestamp: to.Conv.Thread, Oldest: oldest, Limit: sentLookback, IncludeAllMetadata: true})
			return err
		})
	} else {
		err = c.call(ctx, to.Conv.Workspace, "conversations.history", func(ctx context.Context) error {
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

func (c *Channel) post(ctx context.Context, k conv.Key, p piece) (string, error) {
	if c.cfg.Pacing {
		if err := c.sleep(ctx, c.pacer.reserve(k.Chat, c.now())); err != nil {
			return "", fmt.Errorf("slack: send: %w", err)
		}
	}
	token, err := c.token(ctx, k.Workspace)
	if err != nil {
		return "", err
	}
	var ts string
	err = c.call(ctx, k.Workspace, "chat.postMessage", func(ctx context.Context) error {
		var err error
		ts, err = c.postMessage(ctx, token, k.Chat, k.Thread, p)
		return err
	})
	return ts, err
}

func (c *Channel) ephemeral(ctx context.Context, workspace, channel, user, thread string, p piece) error {
	api, err := c.client(ctx, workspace)
	if err != nil {
		return err
	}
	return c.call(ctx, workspace, "chat.postEphemeral", func(ctx context.Context) error {
		_, err := api.PostEphemeralContext(ctx, channel, user, msgOptions(p, thread)...)
		return err
	})
}

// Edit replaces the message ref names with m (chat.update): the first piece edits ref's first
// message, further pieces edit ref's further messages or are posted as new ones (in the
// thread), and messages of ref beyond the pieces are deleted. A message that no longer exists
// is channels.ErrMessageGone (delivery then posts anew). Rate-limited edits coalesce: an edit
// waiting out a rate limit when a newer edit of the same message comes gives up, returning ref
// and no error, so the latest content wins and no stale edit is made after it.
func (c *Channel) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) (_ channels.MessageRef, err error) {
	if ref.ID() == "" || ref.Conv.Chat == "" {
		return ref, fmt.Errorf("slack: edit: %w: empty message ref", channels.ErrMessageGone)
	}
	ps, err := c.pieces(m)
	if err != nil {
		return ref, err
	}
	if ps[len(ps)-1].final {
		defer func() {
			if err != nil {
				c.clearStatusAnyway(ctx, ref.Conv, "")
			}
		}()
	}
	api, err := c.client(ctx, ref.Conv.Workspace)
	if err != nil {
		return ref, err
	}
	key := ref.Conv.Chat + "/" + ref.ID()
	v, _ := c.edits.LoadOrStore(key, new(atomic.Int64))
	gen := v.(*atomic.Int64)
	mine := gen.Add(1)
	defer func() {
		if gen.Load() == mine {
			c.edits.CompareAndDelete(key, gen)
		}
	}()
	superseded := func() bool { return gen.Load() != mine }
	out := channels.MessageRef{Conv: ref.Conv}
	for i, p := range ps {
		if i < len(ref.IDs) {
			id := ref.IDs[i]
			err := c.callUnless(ctx, ref.Conv.Workspace, "chat.update", superseded, func(ctx context.Context) error {
				_, _, _, err := api.UpdateMessageContext(ctx, ref.Conv.Chat, id, msgOptions(p, "")...)
				return err
			})
			if errors.Is(err, errSuperseded) {
				return ref, nil
			}
			if err != nil {
				return ref, err
			}
			out.IDs = append(out.IDs, id)
			continue
		}
		ts, err := c.post(ctx, ref.Conv, p)
		if err != nil {
			return out, err
		}
		out.IDs = append(out.IDs, ts)
	}
	for _, id := range ref.IDs[min(len(ps), len(ref.IDs)):] {
		if err := c.deleteOne(ctx, ref.Conv.Workspace, ref.Conv.Chat, id); err != nil {
			return out, err
		}
	}
	if ps[len(ps)-1].final {
		c.clearStatus(ctx, ref.Conv, "")
	}
	return out, nil
}

// Delete deletes every message of ref. A message already gone counts as deleted.
func (c *Channel) Delete(ctx context.Context, ref channels.MessageRef) error {
	for _, id := range ref.IDs {
		if err := c.deleteOne(ctx, ref.Conv.Workspace, ref.Conv.Chat, id); err != nil {
			return err
		}
	}
	return nil
}

func (c *Channel) deleteOne(ctx context.Context, workspace, channel, ts string) error {
	api, err := c.client(ctx, workspace)
	if err != nil {
		return err
	}
	err = c.call(ctx, workspace, "chat.delete", func(ctx context.Context) error {
		_, _, err := api.DeleteMessageContext(ctx, channel, ts)
		return err
	})
	if errors.Is(err, channels.ErrMessageGone) {
		return nil
	}
	return err
}

// statusText is what the thread shows while a run works.
const statusText = "is thinking…"

// statusTimeout bounds one status call: the router signals typing before the envelope is
// acknowledged, so it must never hold the ack up.
const statusTimeout = 2 * time.Second

// Typing shows "is thinking…" under the conversation's thread with assistant.threads.setStatus
// (Slack allows it in assistant threads; a channel that refuses it is not asked again). The
// status is cleared when the run's final message is posted or edited in, or fails to be (the
// run is over either way), and Slack clears it
// itself when the bot replies. A conversation without a thread shows nothing. It is best
// effort: one attempt of at most two seconds, a rate limit skips it. With StatusAfter, the
// status is set that long after the signal, off the caller's path, and only if the message
// signalled for (the latest, when several were) has no final answer by then: a run answered
// sooner costs no status call at all.
func (c *Channel) Typing(ctx context.Context, to channels.Target) error {
	k := to.Conv
	if c.cfg.AssistantStatusOff || k.Thread == "" {
		return nil
	}
	if _, no := c.noStatus.Load(k.Chat); no {
		return nil
	}
	st := c.threadStatus(k)
	defer st.mu.Unlock()
	if to.ReplyTo != "" && !tsBefore(st.answered, to.ReplyTo) {
		// The message is answered already (a fast run overtook the router's signal): a status
		// set now would stay after the answer.
		return nil
	}
	if c.cfg.StatusAfter > 0 {
		c.scheduleStatus(k, st, to.ReplyTo)
		return nil
	}
	return c.showStatus(ctx, k, st)
}

// scheduleStatus sets k's thread's status StatusAfter from now, unless it shows or is due
// already; st is locked. The latest message signalled is the one whose answer cancels it.
func (c *Channel) scheduleStatus(k conv.Key, st *threadState, replyTo string) {
	if replyTo != "" && tsBefore(st.waitFor, replyTo) {
		st.waitFor = replyTo
	}
	if st.showing(c.now()) || st.timer != nil || c.statusStopped.Load() {
		return
	}
	st.due++
	due := st.due
	c.statusTimers.Add(1)
	st.timer = time.AfterFunc(c.cfg.StatusAfter, func() {
		defer c.statusTimers.Done()
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.timer == nil || st.due != due {
			return // cancelled by an answer (clearStatus) or by Stop
		}
		st.timer = nil
		if c.statusStopped.Load() || (st.waitFor != "" && !tsBefore(st.answered, st.waitFor)) {
			return
		}
		if _, no := c.noStatus.Load(k.Chat); no {
			return
		}
		if err := c.showStatus(context.Background(), k, st); err != nil {
			c.log.Debug("slack: setting the thread status failed", "channel", k.Chat, "err", err)
		}
	})
}

// cancelStatus stops k's thread's scheduled status, if any; st is locked.
func (c *Channel) cancelStatus(st *threadState) {
	if st.timer != nil {
		if st.timer.Stop() {
			c.statusTimers.Done() // it will not run
		}
		st.timer = nil
	}
}

// stopStatuses stops the scheduled statuses (Stop); those already running finish.
func (c *Channel) stopStatuses() {
	c.statusStopped.Store(true)
	c.statuses.Range(func(_, v any) bool {
		st := v.(*threadState)
		st.mu.Lock()
		c.cancelStatus(st)
		st.mu.Unlock()
		return true
	})
}

// showStatus sets k's thread's status now; st is locked.
func (c *Channel) showStatus(ctx context.Context, k conv.Key, st *threadState) error {
	err := c.setStatus(ctx, k, statusText)
	var ae *APIError
	switch {
	case errors.As(err, &ae):
		c.noStatus.Store(k.Chat, struct{}{})
		err = nil
	case err == nil:
		st.shown, st.shownAt = true, c.now()
	}
	if _, limited := errors.AsType[*channels.RateLimitError](err); limited {
		return nil
	}
	return err
}

// threadState orders one thread's status calls — a clear waits for a set in flight, so the
// answer never overtakes the "is thinking…" it should remove — and remembers the latest
// message answered there, so that a signal for it coming after its answer is not shown.
type threadState struct {
	mu       sync.Mutex
	shown    bool        // the last call made in the thread set the status
	shownAt  time.Time   // when it did
	posted   time.Time   // when the bot last posted a working message in the thread
	answered string      // ts of the latest message answered in the thread
	timer    *time.Timer // the status set scheduled (StatusAfter), until it runs or is cancelled
	due      uint64      // counts the sets scheduled, so a cancelled one that runs anyway does nothing
	waitFor  string      // ts of the latest message signalled while one was scheduled
	used     time.Time   // the last status call or answer
	gone     bool        // dropped from Channel.statuses: look the thread up again
}

// answeredMemory is how long a thread's state is kept once it shows nothing: the router signals
// a run right after queueing it, so an answer that overtakes the signal is seconds old at most.
const answeredMemory = time.Minute

// threadStatus returns k's thread's state, locked. Every 1,024 lookups, states that show nothing
// and were unused for answeredMemory are dropped.
func (c *Channel) threadStatus(k conv.Key) *threadState {
	if c.statusLookups.Add(1)%1024 == 0 {
		c.pruneThreadStates()
	}
	key := k.Chat + "/" + k.Thread
	for {
		v, _ := c.statuses.LoadOrStore(key, &threadState{})
		st := v.(*threadState)
		st.mu.Lock()
		if !st.gone {
			st.used = c.now()
			return st
		}
		st.mu.Unlock()
	}
}

func (c *Channel) pruneThreadStates() {
	now := c.now()
	c.statuses.Range(func(key, v any) bool {
		st := v.(*threadState)
		if st.mu.TryLock() {
			if !st.shown && st.timer == nil && now.Sub(st.used) > answeredMemory {
				st.gone = true
				c.statuses.CompareAndDelete(key, st)
			}
			st.mu.Unlock()
		}
		return true
	})
}

// tsBefore reports whether Slack timestamp a is earlier than b. "" is earlier than any; when
// either is not a timestamp it reports true, so an unknown message's signal is shown.
func tsBefore(a, b string) bool {
	if a == "" {
		return true
	}
	as, af, ok1 := strings.Cut(a, ".")
	bs, bf, ok2 := strings.Cut(b, ".")
	if !ok1 || !ok2 || !digits(as) || !digits(af) || !digits(bs) || !digits(bf) || len(af) != len(bf) {
		return true
	}
	if len(as) != len(bs) {
		return len(as) < len(bs)
	}
	return as+"."+af < bs+"."+bf
}

func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func (c *Channel) setStatus(ctx context.Context, k conv.Key, status string) error {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	api, err := c.client(ctx, k.Workspace)
	if err != nil {
		return err
	}
	err = api.SetAssistantThreadsStatusContext(ctx, slackgo.AssistantThreadsSetStatusParameters{ChannelID: k.Chat, ThreadTS: k.Thread, Status: status})
	if err != nil {
		err = c.apiError("assistant.threads.setStatus", err)
		if _, limited := errors.AsType[*channels.RateLimitError](err); limited {
			c.cfg.Metrics.RateLimited("assistant.threads.setStatus")
		}
	}
	return err
}

// statusLasts is how long a status set is taken to show: Slack removes it after two minutes
// without a message, so a run working longer has it set again by the next typing refresh.
const statusLasts = 100 * time.Second

// showing reports whether the status set last still shows: Slack clears it when the bot posts
// in the thread (a working card) and after two minutes, and the next Typing sets it again.
func (st *threadState) showing(now time.Time) bool {
	return st.shown && !st.posted.After(st.shownAt) && now.Sub(st.shownAt) < statusLasts
}

// notePosted records that the bot posted a working message in k's thread, which cleared the
// status Slack showed there.
func (c *Channel) notePosted(k conv.Key) {
	if c.cfg.AssistantStatusOff || k.Thread == "" {
		return
	}
	st := c.threadStatus(k)
	st.posted = c.now()
	st.mu.Unlock()
}

// clearStatus clears a status Typing set, or is setting, in the conversation's thread, once
// the message answered (its ts; "" when not known) has its final answer.
func (c *Channel) clearStatus(ctx context.Context, k conv.Key, answered string) {
	if c.cfg.AssistantStatusOff || k.Thread == "" {
		return
	}
	st := c.threadStatus(k)
	defer st.mu.Unlock()
	if answered != "" && tsBefore(st.answered, answered) {
		st.answered = answered
	}
	if answered == "" || !tsBefore(st.answered, st.waitFor) {
		c.cancelStatus(st) // the run it was for is answered: no status to show
	}
	if st.shown {
		st.shown = false
		if err := c.setStatus(ctx, k, ""); err != nil {
			c.log.Debug("slack: clearing the thread status failed", "channel", k.Chat, "err", err)
		}
	}
}

// clearStatusAnyway clears the thread's status after a run's closing message failed to go out
// (delivery may still post it another way): the run is over either way, and a status left set
// would say it still works. It clears even when ctx has ended (a shutdown), within setStatus's
// own bound.
func (c *Channel) clearStatusAnyway(ctx context.Context, k conv.Key, answered string) {
	c.clearStatus(context.WithoutCancel(ctx), k, answered)
}

// maxNotice bounds an ephemeral notice.
const maxNotice = 2000

// RespondInteraction tells the user who clicked, privately (chat.postEphemeral in the channel
// and thread of the click). An empty notice sends nothing: the click was already acknowledged.
func (c *Channel) RespondInteraction(ctx context.Context, in *channels.Interaction, notice string) error {
	if in == nil {
		return errors.New("slack: respond: no interaction")
	}
	if strings.TrimSpace(notice) == "" {
		return nil
	}
	v, ok := c.pending.Load(in.ID)
	if !ok {
		return errors.New("slack: respond: the interaction is no longer being handled")
	}
	r := v.(responder)
	if rs := []rune(notice); len(rs) > maxNotice {
		notice = string(rs[:maxNotice-1]) + "…"
	}
	text := render.ConvertMarkdown(notice, render.DialectSlack)
	api, err := c.client(ctx, r.workspace)
	if err != nil {
		return err
	}
	return c.call(ctx, r.workspace, "chat.postEphemeral", func(ctx context.Context) error {
		opts := []slackgo.MsgOption{slackgo.MsgOptionText(text, false)}
		if r.thread != "" {
			opts = append(opts, slackgo.MsgOptionTS(r.thread))
		}
		_, err := api.PostEphemeralContext(ctx, r.channel, r.user, opts...)
		return err
	})
}

// OpenForm opens form as a modal (views.open with the click's trigger id, which Slack honours
// for 3 s). The modal carries where it was opened and its field ids, so its submission comes
// back as an Inbound of that conversation with values keyed by field id.
func (c *Channel) OpenForm(ctx context.Context, in *channels.Interaction, form render.Form) error {
	if in == nil || in.ID == "" {
		return errors.New("slack: open form: no trigger id")
	}
	view, err := render.SlackModal(render.Card{Title: "Question", Status: render.StatusWaiting, Form: &form}, c.cfg.ActionKey)
	if err != nil {
		return fmt.Errorf("slack: open form: %w", err)
	}
	meta := formMeta{Conv: in.Message.Conv.String(), MsgTS: in.Message.ID()}
	for _, f := range form.Fields {
		meta.Fields = append(meta.Fields, f.ID)
	}
	mb, err := json.Marshal(meta)
	if err != nil || len(mb) > maxPrivateMetadata {
		return errors.New("slack: open form: the form's metadata is too large for a modal")
	}
	raw, err := json.Marshal(view)
	if err != nil {
		return fmt.Errorf("slack: open form: %w", err)
	}
	var req slackgo.ModalViewRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return fmt.Errorf("slack: open form: %w", err)
	}
	req.PrivateMetadata = string(mb)
	api, err := c.client(ctx, in.Message.Conv.Workspace)
	if err != nil {
		return err
	}
	return c.call(ctx, in.Message.Conv.Workspace, "views.open", func(ctx context.Context) error {
		_, err := api.OpenViewContext(ctx, in.ID, req)
		return err
	})
}
