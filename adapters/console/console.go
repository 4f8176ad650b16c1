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

	outMu sync.Mutex
	seq   int
	// shown is the last text printed for each message id, so an edit that changes nothing
	// visible is not printed again (a terminal cannot rewrite what scrolled by).
	shown map[string]string

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
	return &Channel{opts: opts, shown: map[string]string{}, stop: make(chan struct{}), done: make(chan struct{})}
}

// Conv is the console's one conversation.
var Conv = conv.Key{Platform: Platform, Chat: "terminal"}

// Name reports "console".
func (c *Channel) Name() string { return Platform }

// Start reads lines in the background and hands each to h as a direct message.
func (c *Channel) Start(ctx context.Context, h channels.Handler) error {
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
		n := 0
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
				line = strings.TrimSpace(line)
				if line == "" {
					continue
				}
				n++
				in := channels.Inbound{
					EventID:      "console:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":" + strconv.Itoa(n),
					Conv:         Conv,
					Identity:     conv.Identity{Platform: Platform, ChannelUserID: c.opts.UserID, DisplayName: c.opts.DisplayName},
					Text:         line,
					AddressesBot: true,
					Direct:       true,
					MessageID:    strconv.Itoa(n),
					ReceivedAt:   time.Now(),
				}
				if err := h.HandleInbound(ctx, c, in); err != nil {
					c.printf("! %s\n", userError(err))
				}
			}
		}
	}()
	return nil
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
	if m.Card != nil {
		text = strings.Join(render.Plain(*m.Card), "\n")
	} else {
		text = render.ConvertMarkdown(m.Text, render.DialectPlain)
	}
	text = strings.TrimSpace(text)
	if c.shown[id] == text {
		return
	}
	c.shown[id] = text
	fmt.Fprintf(c.opts.Out, "\nbot> %s\n\n", text)
}

func (c *Channel) printf(format string, args ...any) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	fmt.Fprintf(c.opts.Out, format, args...)
}
