package channels

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/render"
)

// fakeChannel is an in-memory platform with every capability. It keeps the live messages by id
// (what a user would see), every call, and lets a test inject refusals, rate limits and limits.
type fakeChannel struct {
	name string

	mu       sync.Mutex
	seq      int
	live     map[string]string // id → text as shown
	order    []string          // ids in the order posted
	sends    []fakeSend
	edits    []fakeEdit
	deletes  []string
	notices  []string // RespondInteraction notices
	typing   int
	reacts   []string
	opened   []render.Form
	commands []CommandSpec

	// Injected behaviour.
	refuseCards  bool          // Send and Edit refuse cards
	maxEdit      int           // an edit longer than this fails (0: no limit)
	pieceLen     int           // Send splits text into pieces this long (0: 4000)
	rateLimitN   int           // the next N Send/Edit calls answer with a rate limit
	retryAfter   time.Duration // for those
	editGone     bool          // edits answer ErrMessageGone
	failSendsAll bool          // every Send fails
	unreachable  bool          // Send and Edit answer ErrUnreachable (the bot was blocked)
	// partN > 0: the next partN Sends of more pieces than partAt post partAt pieces, then
	// fail with partErr (a 502 when nil).
	partN, partAt int
	partErr       error
	failDeletes   bool // Delete fails
}

type fakeSend struct {
	To   Target
	Msg  Message
	Text string
	IDs  []string
}

type fakeEdit struct {
	Ref  MessageRef
	Text string
}

func newFakeChannel(name string) *fakeChannel {
	return &fakeChannel{name: name, live: map[string]string{}}
}

// show is how a message looks on the fake platform: a card's plain rendering, or the text.
func show(m Message) string {
	if m.Card != nil {
		return strings.Join(render.Plain(*m.Card), "\n")
	}
	return m.Text
}

func (f *fakeChannel) Name() string                         { return f.name }
func (f *fakeChannel) Start(context.Context, Handler) error { return nil }
func (f *fakeChannel) Stop(context.Context) error           { return nil }

func (f *fakeChannel) limited() error {
	if f.rateLimitN > 0 {
		f.rateLimitN--
		return &RateLimitError{RetryAfter: f.retryAfter}
	}
	return nil
}

func (f *fakeChannel) Send(_ context.Context, to Target, m Message) (MessageRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.limited(); err != nil {
		return MessageRef{}, err
	}
	if f.failSendsAll {
		return MessageRef{}, errTooLong
	}
	if f.unreachable {
		return MessageRef{}, ErrUnreachable
	}
	if m.Card != nil && f.refuseCards {
		return MessageRef{}, ErrCardRefused
	}
	text := show(m)
	n := f.pieceLen
	if n == 0 {
		n = 4000
	}
	ref := MessageRef{Conv: to.Conv}
	for start := 0; start < len(text) || start == 0; start += n {
		if f.partN > 0 && len(ref.IDs) == f.partAt && len(text) > f.partAt*n {
			f.partN--
			err := f.partErr
			if err == nil {
				err = errors.New("502 Bad Gateway")
			}
			return ref, err
		}
		f.seq++
		id := strconv.Itoa(f.seq)
		f.live[id] = text[start:min(len(text), start+n)]
		f.order = append(f.order, id)
		ref.IDs = append(ref.IDs, id)
		if len(text) == 0 {
			break
		}
	}
	f.sends = append(f.sends, fakeSend{To: to, Msg: m, Text: text, IDs: ref.IDs})
	return ref, nil
}

func (f *fakeChannel) Edit(_ context.Context, ref MessageRef, m Message) (MessageRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.limited(); err != nil {
		return ref, err
	}
	if f.unreachable {
		return ref, ErrUnreachable
	}
	if m.Card != nil && f.refuseCards {
		return ref, ErrCardRefused
	}
	if _, ok := f.live[ref.ID()]; !ok || f.editGone {
		return ref, ErrMessageGone
	}
	text := show(m)
	if f.maxEdit > 0 && len(text) > f.maxEdit {
		return ref, errTooLong
	}
	if f.live[ref.ID()] == text {
		return ref, ErrNotModified
	}
	f.live[ref.ID()] = text
	f.edits = append(f.edits, fakeEdit{Ref: ref, Text: text})
	return ref, nil
}

func (f *fakeChannel) Delete(_ context.Context, ref MessageRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failDeletes {
		return errors.New("delete refused")
	}
	for _, id := range ref.IDs {
		delete(f.live, id)
		f.deletes = append(f.deletes, id)
	}
	return nil
}

func (f *fakeChannel) Typing(context.Context, Target) error {
	f.mu.Lock()
	f.typing++
	f.mu.Unlock()
	return nil
}

func (f *fakeChannel) React(_ context.Context, ref MessageRef, emoji string) error {
	f.mu.Lock()
	f.reacts = append(f.reacts, ref.ID()+":"+emoji)
	f.mu.Unlock()
	return nil
}

func (f *fakeChannel) OpenForm(_ context.Context, _ *Interaction, form render.Form) error {
	f.mu.Lock()
	f.opened = append(f.opened, form)
	f.mu.Unlock()
	return nil
}

func (f *fakeChannel) RespondInteraction(_ context.Context, _ *Interaction, notice string) error {
	f.mu.Lock()
	f.notices = append(f.notices, notice)
	f.mu.Unlock()
	return nil
}

func (f *fakeChannel) RegisterCommands(_ context.Context, cmds []CommandSpec) error {
	f.mu.Lock()
	f.commands = cmds
	f.mu.Unlock()
	return nil
}

// snapshot helpers

func (f *fakeChannel) sent() []fakeSend {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeSend(nil), f.sends...)
}

func (f *fakeChannel) lastSent() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sends) == 0 {
		return ""
	}
	return f.sends[len(f.sends)-1].Text
}

func (f *fakeChannel) allNotices() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.notices...)
}

func (f *fakeChannel) editCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.edits)
}

// visible is every live message in posting order.
func (f *fakeChannel) visible() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, id := range f.order {
		if t, ok := f.live[id]; ok {
			out = append(out, t)
		}
	}
	return out
}

// sendOnly hides every capability but the core Channel.
type sendOnly struct{ f *fakeChannel }

func (s sendOnly) Name() string                               { return s.f.Name() }
func (s sendOnly) Start(ctx context.Context, h Handler) error { return s.f.Start(ctx, h) }
func (s sendOnly) Stop(ctx context.Context) error             { return s.f.Stop(ctx) }
func (s sendOnly) Send(ctx context.Context, to Target, m Message) (MessageRef, error) {
	return s.f.Send(ctx, to, m)
}

// editNoDelete can edit but not delete.
type editNoDelete struct{ sendOnly }

func (e editNoDelete) Edit(ctx context.Context, ref MessageRef, m Message) (MessageRef, error) {
	return e.f.Edit(ctx, ref, m)
}

var (
	_ Channel              = (*fakeChannel)(nil)
	_ Editor               = (*fakeChannel)(nil)
	_ Deleter              = (*fakeChannel)(nil)
	_ Typer                = (*fakeChannel)(nil)
	_ Reactor              = (*fakeChannel)(nil)
	_ FormOpener           = (*fakeChannel)(nil)
	_ InteractionResponder = (*fakeChannel)(nil)
	_ CommandRegistrar     = (*fakeChannel)(nil)
)
