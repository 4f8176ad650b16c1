package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
)

// discordE2E is an end-to-end setup serving Discord only: the fake Discord, the fake model and a
// unique prefix on the real Redis.
type discordE2E struct {
	*e2e
	dc *discordfake.Server
	// running is the app a test keeps for its metrics.
	running *running
}

// newDiscordE2E is newE2E with Discord as the one platform; mutate adjusts the configuration.
func newDiscordE2E(tb testing.TB, mutate func(*config.Config)) *discordE2E {
	tb.Helper()
	dc := discordfake.New(tb)
	e := newE2E(tb, func(c *config.Config) {
		c.Telegram.Token = ""
		c.Discord.Token = dc.Token()
		c.Discord.APIURL = dc.URL()
		if mutate != nil {
			mutate(c)
		}
	})
	return &discordE2E{e2e: e, dc: dc}
}

func isDiscordPlaceholder(m discordfake.Message) bool {
	return strings.Contains(m.Text(), "Working on it")
}

// discordAnswered reports whether the channel shows exactly n bot messages, none a placeholder.
func discordAnswered(dc *discordfake.Server, channel string, n int) bool {
	posted := dc.PostedByBot(channel)
	if len(posted) != n {
		return false
	}
	for _, m := range posted {
		if isDiscordPlaceholder(m) {
			return false
		}
	}
	return true
}

// waitAnswers waits until channel shows exactly n closing bot messages and returns them.
func (e *discordE2E) waitAnswers(channel string, n int) []discordfake.Message {
	e.tb.Helper()
	waitFor(e.tb, fmt.Sprintf("%d answer(s) in channel %s", n, channel), 20*time.Second,
		func() bool { return discordAnswered(e.dc, channel, n) })
	return e.dc.PostedByBot(channel)
}

// waitQuestion waits for a bot message with components in channel and returns it.
func (e *discordE2E) waitQuestion(channel string) discordfake.Message {
	e.tb.Helper()
	var card discordfake.Message
	waitFor(e.tb, "the question with buttons", 20*time.Second, func() bool {
		for _, m := range e.dc.PostedByBot(channel) {
			if len(m.Components) > 0 {
				card = m
				return true
			}
		}
		return false
	})
	return card
}

// discordButton returns the custom_id of the button labelled label.
func discordButton(tb testing.TB, m discordfake.Message, label string) string {
	tb.Helper()
	var walk func(cs []discordfake.Component) string
	walk = func(cs []discordfake.Component) string {
		for _, c := range cs {
			if c.Type == 2 && c.Label == label {
				return c.CustomID
			}
			if id := walk(c.Components); id != "" {
				return id
			}
		}
		return ""
	}
	if id := walk(m.Components); id != "" {
		return id
	}
	tb.Fatalf("no button %q on %+v", label, m.Components)
	return ""
}

// slashReply sends the slash command /name sub from u in channel ch and returns the text of its
// first reply.
func (e *discordE2E) slashReply(ch string, u discordfake.User, name, sub string) string {
	e.tb.Helper()
	id := e.dc.Slash(ch, u, name, sub, "")
	var text string
	waitFor(e.tb, "the command's answer", 10*time.Second, func() bool {
		ix, _ := e.dc.InteractionByID(id)
		if r := ix.Replies(); len(r) > 0 {
			text = r[0].Text()
			return true
		}
		return false
	})
	return text
}

// waitAcked waits until the interaction got its first response.
func (e *discordE2E) waitAcked(id string) discordfake.Interaction {
	e.tb.Helper()
	var ix discordfake.Interaction
	waitFor(e.tb, "the interaction acknowledged", 10*time.Second, func() bool {
		ix, _ = e.dc.InteractionByID(id)
		_, ok := ix.Acked()
		return ok
	})
	return ix
}
