package telegram

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/render"
)

// Native streaming: Telegram's drafts (Bot API 9.3 and later,
// https://core.telegram.org/bots/api#sendmessagedraft). sendMessageDraft shows a reply being
// written in a private chat (chat_id, an optional message_thread_id, a non-zero draft_id —
// updates of one id are animated —, text of 1–4096 characters after entities parsing with
// parse_mode or entities); a draft is an ephemeral preview of about 30 s per update, and the
// reply is finalised with sendMessage. The adapter implements channels.Streamer with them:
// StartStream and AppendStream send the draft of the answer so far, StopStream posts it with
// sendMessage (split at 4,096 characters like any message). A stream is named by a ref whose id
// is "draft:<draft_id>", which Edit, EditFinal and Delete also take: until the answer is
// posted, an edit of it posts the message in its place (the draft disappears when a message
// arrives in its chat and topic); after, they edit or delete the messages posted. Where delivery
// hands a stream over to its card, it drops the stream (DropStream) rather than stop it, so
// that text about to be edited away is not posted first.

var (
	_ channels.Streamer      = (*Channel)(nil)
	_ channels.StreamDropper = (*Channel)(nil)
)

const (
	// draftRefPrefix starts the id of a ref that names a draft stream rather than a message.
	draftRefPrefix = "draft:"
	// draftEvery spaces one stream's drafts. A draft is a request, paced like an edit of a
	// private chat's message (editThrottle): about one a second — delivery spaces its appends a
	// second apart (Options.StreamEvery), and the adapter sends none sooner than 0.9 s after the
	// last, so that timer jitter never holds a paced draft back. Text appended sooner is kept
	// and goes with the next draft or the final message (each draft carries the whole text).
	draftEvery = 900 * time.Millisecond
	// draftRefresh: a draft shows about 30 s after its last update. While the run works without
	// adding to it (a tool, subagents), its typing signal, every 4 s, shows the draft again once
	// it is this old.
	draftRefresh = 20 * time.Second
	// draftHeaderMax bounds the plan and the tasks shown above a draft's text.
	draftHeaderMax = 1024
	// draftMemory is how long a stream is remembered after its last use, so that delivery's
	// edits of its ref reach the messages it posted.
	draftMemory = 15 * time.Minute
	// maxRefusedChats bounds the chats remembered as refusing drafts; past it they are
	// forgotten (each then costs one refused draft again).
	maxRefusedChats = 10000
)

// draftStream is one answer streamed by drafts. Its mutex is held across the calls that change
// it (delivery makes one call at a time per run; the lock keeps a stray one out).
type draftStream struct {
	mu      sync.Mutex
	conv    conv.Key
	chat    int64
	replyTo string // the message answered: the first message posted replies to it
	id      int64  // draft_id
	content draftContent
	last    time.Time // when the last draft was sent
	// posted are the messages that show the answer, once StopStream or an edit posted them;
	// done: no more drafts (stopped, or taken over by edits).
	posted []string
	done   bool
	used   time.Time
}

// finish ends the drafts of st (st.mu held): what they showed is no longer needed, only the
// messages posted.
func (st *draftStream) finish() {
	st.done = true
	st.content = draftContent{}
}

// draftContent is what a stream holds: the answer's markdown so far, the plan title and the
// latest state of each task, in the order they started.
type draftContent struct {
	text  string
	plan  string
	tasks []channels.StreamTask
}

// with is c with u added.
func (c draftContent) with(u channels.StreamUpdate) draftContent {
	n := draftContent{text: c.text + u.Text, plan: c.plan, tasks: slices.Clone(c.tasks)}
	if u.Plan != "" {
		n.plan = u.Plan
	}
	for _, t := range u.Tasks {
		if i := slices.IndexFunc(n.tasks, func(o channels.StreamTask) bool { return o.ID == t.ID }); i >= 0 {
			n.tasks[i] = t
		} else {
			n.tasks = append(n.tasks, t)
		}
	}
	return n
}

// html is the draft of c, in Telegram HTML within MaxText: the plan title (while there is no
// text yet) and the tasks, then the last page of the text — the page being written; the pages
// before it show as messages once the answer is posted.
func (c draftContent) html() string {
	var head []string
	hasText := strings.TrimSpace(c.text) != ""
	if !hasText && c.plan != "" {
		head = append(head, "<i>"+tgText(c.plan)+"</i>")
	}
	for _, t := range c.tasks {
		line := taskIcon(t.Status) + " <b>" + tgText(t.Title) + "</b>"
		if t.Output != "" {
			line += " — " + tgText(t.Output)
		}
		head = append(head, line)
	}
	header := ""
	if len(head) > 0 {
		if pages := render.Chunk(strings.Join(head, "\n"), draftHeaderMax, render.DialectTelegram); len(pages) > 0 {
			header = pages[0]
		}
	}
	if !hasText {
		return header
	}
	limit := MaxText
	if header != "" {
		limit -= render.VisibleWidth(header, render.DialectTelegram) + 2
	}
	pages := render.Chunk(render.ConvertMarkdown(c.text, render.DialectTelegram), limit, render.DialectTelegram)
	if len(pages) == 0 {
		return header
	}
	if header == "" {
		return pages[len(pages)-1]
	}
	return header + "\n\n" + pages[len(pages)-1]
}

// tgText is plain text as Telegram HTML that pings nobody.
func tgText(s string) string {
	return render.EscapeHTML(render.NeutralizeUsernames(render.NeutralizeMentions(s)))
}

func taskIcon(s channels.TaskStatus) string {
	switch s {
	case channels.TaskDone:
		return "✅"
	case channels.TaskFailed:
		return "⚠️"
	}
	return "⏳"
}

// draftBook is the channel's streams, by ref id, and what it learned of where drafts are
// refused. Safe for concurrent use.
type draftBook struct {
	mu      sync.Mutex
	swept   time.Time
	streams map[string]*draftStream
	open    map[conv.Key]*draftStream // the latest stream started in each conversation
	refused map[int64]struct{}        // chats whose drafts were refused (400)
	// unsupported: the Bot API server does not know sendMessageDraft (404: older than 9.3).
	unsupported atomic.Bool
	seq         atomic.Int64
}

func newDraftBook() *draftBook {
	b := &draftBook{streams: map[string]*draftStream{}, open: map[conv.Key]*draftStream{}, refused: map[int64]struct{}{}}
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	// Draft ids start at a random point, so that a process restarted mid-answer does not reuse
	// the ids of the one before in the same chats.
	b.seq.Store(int64(binary.BigEndian.Uint64(seed[:]) >> 34))
	return b
}

// nextID is a new draft_id: non-zero, within 31 bits (the libraries disagree on its width).
func (b *draftBook) nextID() int64 { return b.seq.Add(1)%(1<<31-1) + 1 }

func draftRef(id int64) string { return draftRefPrefix + strconv.FormatInt(id, 10) }

func isDraftRef(id string) bool { return strings.HasPrefix(id, draftRefPrefix) }

// add keeps st under ref id — as its conversation's open stream when it is not done —, and
// once a minute forgets the streams unused for draftMemory.
func (b *draftBook) add(id string, st *draftStream, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.swept) > time.Minute {
		b.swept = now
		for k, o := range b.streams {
			if !o.mu.TryLock() {
				continue // in use: not idle
			}
			stale := now.Sub(o.used) > draftMemory
			if stale {
				delete(b.streams, k)
			}
			if (stale || o.done) && b.open[o.conv] == o {
				delete(b.open, o.conv)
			}
			o.mu.Unlock()
		}
	}
	st.used = now
	b.streams[id] = st
	if !st.done {
		b.open[st.conv] = st
	}
}

// openIn is the stream last started in k, if any (it may be done since).
func (b *draftBook) openIn(k conv.Key) *draftStream {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open[k]
}

// find returns the stream ref names, if this process knows it (in ref's chat).
func (b *draftBook) find(ref channels.MessageRef, chat int64) *draftStream {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st := b.streams[ref.ID()]; st != nil && st.chat == chat {
		return st
	}
	return nil
}

// adopt returns the stream ref names, kept from now on: a draft of an earlier attempt (another
// process, or one forgotten) is taken over as done, with nothing posted.
func (b *draftBook) adopt(ref channels.MessageRef, chat int64, now time.Time) *draftStream {
	if st := b.find(ref, chat); st != nil {
		return st
	}
	st := &draftStream{conv: ref.Conv, chat: chat, done: true}
	b.add(ref.ID(), st, now)
	return st
}

func (b *draftBook) forget(id string) {
	b.mu.Lock()
	delete(b.streams, id)
	b.mu.Unlock()
}

func (b *draftBook) refuse(chat int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.refused) >= maxRefusedChats {
		clear(b.refused)
	}
	b.refused[chat] = struct{}{}
}

func (b *draftBook) isRefused(chat int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.refused[chat]
	return ok
}

// streamer streams answers by drafts (channels.Streamer, channels.StreamDropper): the
// streams it started are kept in book; posting what they show, and editing or deleting it after,
// is the sender's (out).
type streamer struct {
	cfg   *Config
	api   *botAPI
	clock *kit.Clock
	pacer *pacer
	book  *draftBook
	out   *sender
}

// CanStream reports whether an answer may stream by drafts in the conversation: drafts are on
// (Config.Drafts), the chat is private (users' ids are positive; groups', supergroups' and
// channels' negative), and neither this chat nor the server refused a draft before.
func (sm *streamer) CanStream(to channels.Target) bool {
	if !sm.cfg.Drafts || sm.book.unsupported.Load() {
		return false
	}
	chat, err := chatID(to.Conv)
	return err == nil && chat > 0 && !sm.book.isRefused(chat)
}

// StartStream shows the first draft of the answer (u) in the conversation's chat and topic. A
// refusal — the server does not know sendMessageDraft, or refuses drafts in this chat — wraps
// channels.ErrStreamRefused and is remembered (CanStream); nothing was shown then.
func (sm *streamer) StartStream(ctx context.Context, to channels.Target, u channels.StreamUpdate) (channels.MessageRef, error) {
	ref := channels.MessageRef{Conv: to.Conv}
	if !sm.CanStream(to) {
		return ref, fmt.Errorf("telegram: sendMessageDraft: %w: drafts are off, or not for this chat", channels.ErrStreamRefused)
	}
	chat, _ := chatID(to.Conv)
	st := &draftStream{conv: to.Conv, chat: chat, replyTo: to.ReplyTo, id: sm.book.nextID()}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := sm.sendDraft(ctx, st, st.content.with(u)); err != nil {
		return ref, err
	}
	ref.IDs = []string{draftRef(st.id)}
	sm.book.add(ref.ID(), st, sm.clock.Now())
	return ref, nil
}

// AppendStream adds u to the answer and shows the new draft — unless the last one is less than
// draftEvery old: u then goes with the next draft or the final message. A stream this process
// does not know, or one already posted, wraps channels.ErrStreamRefused.
func (sm *streamer) AppendStream(ctx context.Context, ref channels.MessageRef, u channels.StreamUpdate) error {
	st, err := sm.openStream(ref, "sendMessageDraft")
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	next := st.content.with(u)
	if sm.clock.Now().Sub(st.last) < draftEvery {
		st.content = next
		return nil
	}
	return sm.sendDraft(ctx, st, next)
}

// StopStream adds u and posts the answer with sendMessage — as a reply to the message answered,
// in the conversation's topic, split at 4,096 characters — which replaces the draft. A stream
// with no text posts nothing (its draft lapses). A stream already stopped is left alone; one
// this process does not know is too when u adds nothing (an earlier attempt's), else refused
// (channels.ErrStreamRefused). When a later piece fails, the pieces posted are the stream's:
// edits of its ref edit them.
func (sm *streamer) StopStream(ctx context.Context, ref channels.MessageRef, u channels.StreamUpdate) error {
	chat, err := chatID(ref.Conv)
	if err != nil {
		return err
	}
	st := sm.book.find(ref, chat)
	if st == nil {
		if u.Text == "" {
			return nil
		}
		return fmt.Errorf("telegram: sendMessage: %w: no such draft", channels.ErrStreamRefused)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.used = sm.clock.Now()
	if st.done {
		return nil
	}
	next := st.content.with(u)
	if strings.TrimSpace(next.text) == "" {
		st.finish()
		return nil
	}
	out, err := sm.out.Send(ctx, channels.Target{Conv: st.conv, ReplyTo: st.replyTo}, channels.Message{Text: next.text})
	if len(out.IDs) > 0 {
		st.posted = out.IDs
		st.finish()
	}
	return err
}

// DropStream ends the stream without posting it: delivery hands the stream's place over to its
// card (a notice, a new attempt, a final card that replaces the streamed text), which the next
// Edit of ref posts there — the draft goes when that message arrives, or lapses. Text of an
// answer about to be replaced is so never posted. A stream already posted, or unknown, is left
// as it is.
func (sm *streamer) DropStream(ctx context.Context, ref channels.MessageRef) error {
	chat, err := chatID(ref.Conv)
	if err != nil {
		return err
	}
	if st := sm.book.find(ref, chat); st != nil {
		st.mu.Lock()
		st.finish()
		st.used = sm.clock.Now()
		st.mu.Unlock()
	}
	return nil
}

// openStream returns ref's stream locked, for a call named method, while drafts still go to it.
func (sm *streamer) openStream(ref channels.MessageRef, method string) (*draftStream, error) {
	chat, err := chatID(ref.Conv)
	if err != nil {
		return nil, err
	}
	st := sm.book.find(ref, chat)
	if st == nil {
		return nil, fmt.Errorf("telegram: %s: %w: no such draft", method, channels.ErrStreamRefused)
	}
	st.mu.Lock()
	st.used = sm.clock.Now()
	if st.done {
		st.mu.Unlock()
		return nil, fmt.Errorf("telegram: %s: %w: the answer was posted", method, channels.ErrStreamRefused)
	}
	return st, nil
}

// sendDraft shows next as st's draft (st.mu held) and makes it st's content. With pacing on, a
// draft takes a slot of the bot's overall rate, as a message does. HTML Telegram refuses to
// parse is sent as plain text.
func (sm *streamer) sendDraft(ctx context.Context, st *draftStream, next draftContent) error {
	text := next.html()
	if text == "" {
		st.content = next
		return nil
	}
	if sm.cfg.Pacing {
		if err := sm.clock.Sleep(ctx, sm.pacer.reserveGlobal(sm.clock.Now())); err != nil {
			return fmt.Errorf("telegram: sendMessageDraft: %w", err)
		}
	}
	params := draftParams(st, text)
	// A draft replaces the one before: sending it again is harmless (idempotent).
	_, err := sm.api.call(ctx, "sendMessageDraft", params, true)
	if err != nil && parseEntitiesError(err) {
		params["text"] = plainText(text)
		delete(params, "parse_mode")
		_, err = sm.api.call(ctx, "sendMessageDraft", params, true)
	}
	if err != nil {
		return sm.draftError(st.chat, err)
	}
	st.content, st.last = next, sm.clock.Now()
	return nil
}

// draftParams are the parameters of st's draft showing text (Telegram HTML).
func draftParams(st *draftStream, text string) tgbotapi.Params {
	params := tgbotapi.Params{
		"chat_id":    strconv.FormatInt(st.chat, 10),
		"draft_id":   strconv.FormatInt(st.id, 10),
		"text":       text,
		"parse_mode": "HTML",
	}
	if st.conv.Thread != "" {
		params["message_thread_id"] = st.conv.Thread
	}
	return params
}

// refreshDraft shows st's draft again when the last one is draftRefresh old and the stream is
// still open: one try, best effort, skipped while another call holds the stream.
func (sm *streamer) refreshDraft(ctx context.Context, st *draftStream) {
	if !st.mu.TryLock() {
		return
	}
	defer st.mu.Unlock()
	if st.done || st.last.IsZero() || sm.clock.Now().Sub(st.last) < draftRefresh {
		return
	}
	text := st.content.html()
	if text == "" {
		return
	}
	params := draftParams(st, text)
	_, err := sm.api.callOnce(ctx, "sendMessageDraft", params)
	if err != nil && parseEntitiesError(err) {
		params["text"] = plainText(text)
		delete(params, "parse_mode")
		_, err = sm.api.callOnce(ctx, "sendMessageDraft", params)
	}
	if err != nil {
		sm.cfg.Logger.Debug("telegram: showing the draft again failed", "err", err)
		return
	}
	st.last = sm.clock.Now()
}

// draftError classifies a refused draft: 404 (a server older than Bot API 9.3) turns drafts
// off for the channel, another 400 for the chat (a chat type or bot drafts are not allowed for);
// both wrap channels.ErrStreamRefused. Rate limits, unreachable chats and server errors pass
// as they are.
func (sm *streamer) draftError(chat int64, err error) error {
	ae, ok := errors.AsType[*APIError](err)
	if !ok {
		return err
	}
	switch {
	case ae.Code == http.StatusNotFound:
		if !sm.book.unsupported.Swap(true) {
			sm.cfg.Logger.Warn("telegram: the Bot API server does not know sendMessageDraft (Bot API 9.3); answers are posted and edited instead", "err", err)
		}
	case ae.Code == http.StatusBadRequest && !errors.Is(ae, channels.ErrUnreachable):
		sm.book.refuse(chat)
		sm.cfg.Logger.Info("telegram: Telegram refused a draft; answers in this chat are posted and edited instead", "chat", chat, "err", err)
	default:
		return err
	}
	return fmt.Errorf("%w: %w", channels.ErrStreamRefused, err)
}

// editDraft is Edit of a draft's ref: the first posts m in the draft's place (as a reply to the
// message answered, in its topic) — the draft disappears when it arrives — and later ones edit
// what was posted. No draft goes to the stream after it. A draft this process does not know
// (an earlier attempt's) is taken over with nothing posted.
func (sm *streamer) editDraft(ctx context.Context, chat int64, ref channels.MessageRef, m channels.Message, final bool) (channels.MessageRef, error) {
	st := sm.book.adopt(ref, chat, sm.clock.Now())
	st.mu.Lock()
	defer st.mu.Unlock()
	st.finish()
	st.used = sm.clock.Now()
	if len(st.posted) == 0 {
		out, err := sm.out.Send(ctx, channels.Target{Conv: st.conv, ReplyTo: st.replyTo}, m)
		if err == nil {
			st.posted = out.IDs
		}
		return out, err
	}
	out, err := sm.out.edit(ctx, channels.MessageRef{Conv: ref.Conv, IDs: st.posted}, m, final)
	if err == nil && len(out.IDs) > 0 {
		st.posted = out.IDs
	}
	return out, err
}

// deleteDraft is Delete of a draft's ref: the messages it posted are deleted; a draft never
// posted needs nothing (it lapses).
func (sm *streamer) deleteDraft(ctx context.Context, chat int64, ref channels.MessageRef) error {
	st := sm.book.find(ref, chat)
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.finish()
	for _, id := range st.posted {
		if err := sm.out.deleteOne(ctx, chat, id); err != nil {
			return err
		}
	}
	st.posted = nil
	sm.book.forget(ref.ID())
	return nil
}
