package discord

import (
	"context"
	"errors"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
)

// typer shows "typing…" while a run works (Typing), off the caller's path (kit.TypingSignals).
type typer struct {
	rest    *rest
	s       *discordgo.Session
	threads *threadMaker
	signals *kit.TypingSignals
}

// Typing shows "typing…" in the conversation's channel or thread (about 10 s).
func (t *typer) Typing(ctx context.Context, to channels.Target) error {
	if to.Conv.Chat == "" {
		return errors.New("discord: conversation without a channel")
	}
	// A signal, not a message: sent off the caller's path (the router signals inside the
	// hand-over of a message), once while it still shows (a message ends it), within typingTimeout.
	t.signals.Signal(to.Conv.String(), func(ctx context.Context) error {
		chID, err := t.threads.channelFor(ctx, to.Conv)
		if err != nil {
			return err
		}
		// One attempt: a 429 is not waited out (nor handed to a retry).
		return t.rest.limits.Once("typing", t.rest.request(ctx, "typing", func(opts ...discordgo.RequestOption) error {
			return t.s.ChannelTyping(chID, opts...)
		}))
	})
	return nil
}

// typingTimeout bounds one typing signal; typingLasts is a little less than the 10 s Discord
// shows one.
const (
	typingTimeout = 5 * time.Second
	typingLasts   = 8 * time.Second
)
