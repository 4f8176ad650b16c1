// Package console is the terminal channel behind `bot chat`: every line typed is a message in
// one direct conversation with the bot, and every message the bot sends is printed as plain
// text. A form is answered by typing an option's number; /help, /new and /cancel work as on any
// platform because the router handles them.
package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/render"
)

// Platform is the ConvKey platform of the console.
const Platform = "console"

// Options configure a console channel.
type Options struct {
	In  io.Reader
	Out io.Writer
	// UserID is the channel_user_id of the person at the terminal ("local" when empty).
	UserID string
	// DisplayName is how they are called ("you" when empty).
	DisplayName string
	// OnEOF is called once when the input ends (e.g. Ctrl-D), so the caller can shut down.
	OnEOF func()
}

// Channel is the console channel. Safe for concurrent use.
type Channel struct {
	opts Options
	// h is the handler Start was given; n numbers the lines handed to it.
	h atomic.Pointer[channels.Handler]
	n atomic.Int64

	outMu sync.Mutex
	seq   int
	// shown is the last text printed for each message id, so an edit that changes nothing
	// visible is not printed again (a terminal cannot rewrite what scrolled by).
	shown map[string]string
	// progress is, for each message id that showed a working card, what of it was printed.
	progress map[string]*shownProgress

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

var (
	_ channels.Channel = (*Channel)(nil)
	_ channels.Editor  = (*Channel)(nil)
)

// New returns a console channel reading lines from opts.In and printing to opts.Out.
func New(opts Options) *Channel {
	if opts.UserID == "" {
		opts.UserID = "local"
	}
	if opts.DisplayName == "" {
		opts.DisplayName = "you"
	}
	return &Channel{opts: opts, shown: map[string]string{}, progress: map[string]*shownProgress{}, stop: make(chan struct{}), done: make(chan struct{})}
}

// Conv is the console's one conversation.
var Conv = conv.Key{Platform: Platform, Chat: "terminal"}

// Name reports "console".
func (c *Channel) Name() string { return Platform }

// Start reads lines in the background and hands each to h as a direct message.
func (c *Channel) Start(ctx context.Context, h channels.Handler) error {
	c.h.Store(&h)
	lines := make(chan string)
	go func() {
		// The reader goroutine may stay blocked in Read after Stop (a terminal cannot be
		// interrupted portably); it owns nothing and ends with the process or the input.
		sc := bufio.NewScanner(c.opts.In)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-c.stop:
				return
			}
		}
		close(lines)
	}()
	go func() {
		defer close(c.done)
		for {
			select {
			case <-c.stop:
				return
			case <-ctx.Done():
				return
			case line, ok := <-lines:
				if !ok {
					if c.opts.OnEOF != nil {
						c.opts.OnEOF()
					}
					return
				}
				if strings.TrimSpace(line) != "" {
					c.hand(ctx, h, line)
				}
			}
		}
	}()
	return nil
}

// hand gives h one line as a direct message from the person at the terminal.
func (c *Channel) hand(ctx context.Context, h channels.Handler, line string) {
	n := strconv.FormatInt(c.n.Add(1), 10)
	in := channels.Inbound{
		EventID:      "console:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":" + n,
		Conv:         Conv,
		Identity:     conv.Identity{Platform: Platform, ChannelUserID: c.opts.UserID, DisplayName: c.opts.DisplayName},
		Text:         strings.TrimSpace(line),
		AddressesBot: true,
		Direct:       true,
		MessageID:    n,
		ReceivedAt:   time.Now(),
	}
	if err := h.HandleInbound(ctx, c, in); err != nil {
		c.printf("! %s\n", userError(err))
	}
}

// Type hands line to the handler as if it had been typed at the terminal, and returns once it
// is handled (`bot chat` types /cancel on Ctrl-C). Before Start it does nothing.
func (c *Channel) Type(ctx context.Context, line string) {
	if h := c.h.Load(); h != nil && strings.TrimSpace(line) != "" {
		c.hand(ctx, *h, line)
	}
}

// Notice prints a line of the terminal's own — not a message from the bot — between the bot's
// messages.
func (c *Channel) Notice(text string) {
	c.printf("%s\n", text)
}

func userError(err error) string {
	if errors.Is(err, context.Canceled) {
		return "stopped"
	}
	return "that message could not be handled: " + err.Error()
}

// Stop stops reading; messages already handed over finish elsewhere.
func (c *Channel) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() { close(c.stop) })
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Send prints a message and returns a reference to it.
func (c *Channel) Send(_ context.Context, _ channels.Target, m channels.Message) (channels.MessageRef, error) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	c.seq++
	id := strconv.Itoa(c.seq)
	c.print(id, m)
	return channels.MessageRef{Conv: Conv, IDs: []string{id}}, nil
}

// Edit prints the new version of a message, unless it looks the same as what was printed.
func (c *Channel) Edit(_ context.Context, ref channels.MessageRef, m channels.Message) (channels.MessageRef, error) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	c.print(ref.ID(), m)
	return ref, nil
}

// print writes m; the caller holds outMu.
func (c *Channel) print(id string, m channels.Message) {
	var text string
	switch {
	case m.Card != nil && m.Card.Status == render.StatusWorking:
		text = c.progressText(id, *m.Card)
	case m.Card != nil:
		text = strings.Join(render.Plain(*m.Card), "\n")
		delete(c.progress, id)
	default:
		text = render.ConvertMarkdown(m.Text, render.DialectPlain)
	}
	text = strings.TrimSpace(text)
	if text == "" || c.shown[id] == text {
		return
	}
	c.shown[id] = text
	fmt.Fprintf(c.opts.Out, "\nbot> %s\n\n", text)
}

// shownProgress is what the terminal shows of a working card: its body and subagent sections.
type shownProgress struct {
	body      string
	subagents map[string]bool
}

// progressText is what to print of a working card: a terminal cannot rewrite what scrolled by,
// so an update of a card already printed shows only what is new — the subagents that finished
// since, in the card's order, and the progress line when it changed. "" when nothing is.
func (c *Channel) progressText(id string, card render.Card) string {
	p := c.progress[id]
	if p == nil {
		p = &shownProgress{subagents: map[string]bool{}}
		c.progress[id] = p
		p.body = card.Body
		for _, s := range card.Subagents {
			p.subagents[subagentKey(s)] = true
		}
		return strings.Join(render.Plain(card), "\n")
	}
	var fresh []render.SubagentResult
	for _, s := range card.Subagents {
		if k := subagentKey(s); !p.subagents[k] {
			p.subagents[k] = true
			fresh = append(fresh, s)
		}
	}
	body := ""
	if card.Body != p.body {
		body, p.body = card.Body, card.Body
	}
	if len(fresh) == 0 && body == "" {
		return ""
	}
	card.Subagents, card.Body = fresh, body
	return strings.Join(render.Plain(card), "\n")
}

func subagentKey(s render.SubagentResult) string {
	return s.Name + "\x00" + s.StopReason + "\x00" + s.Summary
}

func (c *Channel) printf(format string, args ...any) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	fmt.Fprintf(c.opts.Out, format, args...)
}
