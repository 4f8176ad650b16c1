package telegram

import (
	"time"

	"github.com/switchboard-bot/switchboard/channels/kit"
)

// Pacing limits: about one message a second per private chat and 20 a minute per group, each
// with a burst of paceBurst so a short chunked answer is not held back; and, over all chats, at
// most globalPerSecond in any one second
// (https://core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this): a burst of
// globalBurst, then one every globalInterval, spaced so that burst and steady rate together stay
// within the second.
const (
	privateInterval = time.Second
	groupInterval   = 3 * time.Second
	paceBurst       = 3

	globalPerSecond = 30
	globalBurst     = 3
	globalInterval  = time.Second / (globalPerSecond - globalBurst)
)

// pacer spaces sends per chat — each chat has its own schedule, so a busy chat never holds up
// another — and over all chats. A send first waits for its chat's slot, then books the next
// overall slot, so the overall schedule is taken in the order sends become due: a chat joins it
// no faster than its own pace (a burst of paceBurst, then one a second at most), and a quiet chat
// waits behind that much of a busy chat's traffic, never behind its backlog. (A send the overall
// limit holds up may come closer to its chat's next one than the chat's pace; never earlier
// than its own slot.)
type pacer struct {
	chats  *kit.Pacer[int64]
	global *kit.Pacer[struct{}]
}

func newPacer() *pacer {
	return &pacer{chats: kit.NewPacer[int64](), global: kit.NewPacer[struct{}]()}
}

// reserve books a send slot in chat at now and returns how long to wait for it.
func (p *pacer) reserve(chat int64, now time.Time) time.Duration {
	interval := privateInterval
	if chat < 0 { // group, supergroup and channel ids are negative
		interval = groupInterval
	}
	return p.chats.Reserve(chat, now, interval, paceBurst)
}

// reserveGlobal books the bot's next overall send slot at now — to be called once the chat's
// own slot (reserve) has come — and returns how long to wait for it. A slot booked by a send
// that is then abandoned stays spent.
func (p *pacer) reserveGlobal(now time.Time) time.Duration {
	return p.global.Reserve(struct{}{}, now, globalInterval, globalBurst)
}
