package chantest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/render"
)

// Channel is an in-memory platform with every capability. It keeps the live messages by id
// (what a user would see), every call, and lets a test inject refusals, rate limits and limits.
type Channel struct {
	name string

	Mu       sync.Mutex
	seq      int
	Live     map[string]string // id → text as shown
	Order    []string          // ids in the order posted
	Sends    []SendCall
	Edits    []EditCall
	Deletes  []string
	Notices  []string // RespondInteraction notices
	Typings  int
	Reacts   []string
	Opened   []render.Form
	Commands []channels.CommandSpec

	// Injected behaviour.
	RefuseCards  bool          // Send and Edit refuse cards
	MaxEdit      int           // an edit longer than this fails (0: no limit)
	PieceLen     int           // Send splits text into pieces this long (0: 4000)
	RateLimitN   int           // the next N Send/Edit calls answer with a rate limit
	RetryAfter   time.Duration // for those
	EditGone     bool          // edits answer channels.ErrMessageGone
	FailSendsAll bool          // every Send fails
	Unreachable  bool          // Send and Edit answer channels.ErrUnreachable (the bot was blocked)
	// partN > 0: the next partN Sends of more pieces than partAt post partAt pieces, then
	// fail with PartErr (a 502 when nil).
	PartN, PartAt int
	PartErr       error
	FailDeletes   bool // Delete fails
}

type SendCall struct {
	To   channels.Target
	Msg  channels.Message
	Text string
	IDs  []string
}

type EditCall struct {
	Ref  channels.MessageRef
	Text string
}

func NewChannel(name string) *Channel {
	return &Channel{name: name, Live: map[string]string{}}
}

// show is how a message looks on the fake platform: a card's plain rendering, or the text.
func Show(m channels.Message) string {
	if m.Card != nil {
		return strings.Join(render.Plain(*m.Card), "\n")
	}
	return m.Text
}

func (f *Channel) Name() string                                  { return f.name }
func (f *Channel) Start(context.Context, channels.Handler) error { return nil }
func (f *Channel) Stop(context.Context) error                    { return nil }

func (f *Channel) limited() error {
	if f.RateLimitN > 0 {
		f.RateLimitN--
		return &channels.RateLimitError{RetryAfter: f.RetryAfter}
	}
	return nil
}

func (f *Channel) Send(_ context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.limited(); err != nil {
		return channels.MessageRef{}, err
	}
	if f.FailSendsAll {
		return channels.MessageRef{}, ErrTooLong
	}
	if f.Unreachable {
		return channels.MessageRef{}, channels.ErrUnreachable
	}
	if m.Card != nil && f.RefuseCards {
		return channels.MessageRef{}, channels.ErrCardRefused
	}
	text := Show(m)
	n := f.PieceLen
	if n == 0 {
		n = 4000
	}
	ref := channels.MessageRef{Conv: to.Conv}
	for start := 0; start < len(text) || start == 0; start += n {
		if f.PartN > 0 && len(ref.IDs) == f.PartAt && len(text) > f.PartAt*n {
			f.PartN--
			err := f.PartErr
			if err == nil {
				err = errors.New("502 Bad Gateway")
			}
			return ref, err
		}
		f.seq++
		id := strconv.Itoa(f.seq)
		f.Live[id] = text[start:min(len(text), start+n)]
		f.Order = append(f.Order, id)
		ref.IDs = append(ref.IDs, id)
		if len(text) == 0 {
			break
		}
	}
	f.Sends = append(f.Sends, SendCall{To: to, Msg: m, Text: text, IDs: ref.IDs})
	return ref, nil
}

func (f *Channel) Edit(_ context.Context, ref channels.MessageRef, m channels.Message) (channels.MessageRef, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.limited(); err != nil {
		return ref, err
	}
	if f.Unreachable {
		return ref, channels.ErrUnreachable
	}
	if m.Card != nil && f.RefuseCards {
		return ref, channels.ErrCardRefused
	}
	if _, ok := f.Live[ref.ID()]; !ok || f.EditGone {
		return ref, channels.ErrMessageGone
	}
	text := Show(m)
	if f.MaxEdit > 0 && len(text) > f.MaxEdit {
		return ref, ErrTooLong
	}
	if f.Live[ref.ID()] == text {
		return ref, channels.ErrNotModified
	}
	f.Live[ref.ID()] = text
	f.Edits = append(f.Edits, EditCall{Ref: ref, Text: text})
	return ref, nil
}

func (f *Channel) Delete(_ context.Context, ref channels.MessageRef) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if f.FailDeletes {
		return errors.New("delete refused")
	}
	for _, id := range ref.IDs {
		delete(f.Live, id)
		f.Deletes = append(f.Deletes, id)
	}
	return nil
}

func (f *Channel) Typing(context.Context, channels.Target) error {
	f.Mu.Lock()
	f.Typings++
	f.Mu.Unlock()
	return nil
}

func (f *Channel) React(_ context.Context, ref channels.MessageRef, emoji string) error {
	f.Mu.Lock()
	f.Reacts = append(f.Reacts, ref.ID()+":"+emoji)
	f.Mu.Unlock()
	return nil
}

func (f *Channel) OpenForm(_ context.Context, _ *channels.Interaction, form render.Form) error {
	f.Mu.Lock()
	f.Opened = append(f.Opened, form)
	f.Mu.Unlock()
	return nil
}

func (f *Channel) RespondInteraction(_ context.Context, _ *channels.Interaction, notice string) error {
	f.Mu.Lock()
	f.Notices = append(f.Notices, notice)
	f.Mu.Unlock()
	return nil
}

func (f *Channel) RegisterCommands(_ context.Context, cmds []channels.CommandSpec) error {
	f.Mu.Lock()
	f.Commands = cmds
	f.Mu.Unlock()
	return nil
}

// snapshot helpers

func (f *Channel) Sent() []SendCall {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return append([]SendCall(nil), f.Sends...)
}

func (f *Channel) LastSent() string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if len(f.Sends) == 0 {
		return ""
	}
	return f.Sends[len(f.Sends)-1].Text
}

func (f *Channel) AllNotices() []string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return append([]string(nil), f.Notices...)
}

func (f *Channel) EditCount() int {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return len(f.Edits)
}

// visible is every live message in posting order.
func (f *Channel) Visible() []string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	var out []string
	for _, id := range f.Order {
		if t, ok := f.Live[id]; ok {
			out = append(out, t)
		}
	}
	return out
}

// SendOnly hides every capability but the core channels.Channel.
type SendOnly struct{ F *Channel }

func (s SendOnly) Name() string                                        { return s.F.Name() }
func (s SendOnly) Start(ctx context.Context, h channels.Handler) error { return s.F.Start(ctx, h) }
func (s SendOnly) Stop(ctx context.Context) error                      { return s.F.Stop(ctx) }
func (s SendOnly) Send(ctx context.Context, to channels.Target, m channels.Message) (channels.MessageRef, error) {
	return s.F.Send(ctx, to, m)
}

// EditNoDelete can edit but not delete.
type EditNoDelete struct{ SendOnly }

func (e EditNoDelete) Edit(ctx context.Context, ref channels.MessageRef, m channels.Message) (channels.MessageRef, error) {
	return e.F.Edit(ctx, ref, m)
}

var (
	_ channels.Channel              = (*Channel)(nil)
	_ channels.Editor               = (*Channel)(nil)
	_ channels.Deleter              = (*Channel)(nil)
	_ channels.Typer                = (*Channel)(nil)
	_ channels.Reactor              = (*Channel)(nil)
	_ channels.FormOpener           = (*Channel)(nil)
	_ channels.InteractionResponder = (*Channel)(nil)
	_ channels.CommandRegistrar     = (*Channel)(nil)
)
