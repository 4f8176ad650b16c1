package channels

import (
	"context"
	"strings"

	"github.com/switchboard-bot/switchboard/render"
)

// StepFile holds the JSON MessageRef of the file carrying the rest of a long answer, once sent;
// StepFileIntent is its write-ahead intent (as StepFinalIntent is the closing message's).
const (
	StepFile       = "file"
	StepFileIntent = StepFile + ".intent"
)

// The file a long answer's rest is sent as, and what the messages and the file say about it.
const (
	answerFileName    = "answer.md"
	answerFileNote    = "_The rest of the answer is in the file " + answerFileName + " below._"
	answerFileCaption = "The rest of the answer."
)

// splitAnswer keeps an answer card within limit messages of a channel that can send files: when
// card (an answer) would take more, it returns the card holding the longest head of the answer
// that fits — cut at a paragraph or line end outside any code block — with a note that the rest
// follows as a file, and that rest (markdown, the answer's own text). It returns card unchanged
// and no rest when the answer fits, the limit is off, or the channel cannot count its messages
// or send files.
func splitAnswer(ch Channel, card render.Card, limit int) (render.Card, string) {
	pg, ok := ch.(Pager)
	if _, files := ch.(FileSender); !ok || !files || limit <= 0 {
		return card, ""
	}
	fits := func(head string) bool {
		c := card
		c.Body = joinParagraphs(head, answerFileNote)
		n, err := pg.Pages(Message{Card: &c})
		return err == nil && n <= limit
	}
	if n, err := pg.Pages(Message{Card: &card}); err != nil || n <= limit {
		return card, ""
	}
	body := card.Body
	cuts := lineCuts(body)
	// The longest head that fits: heads grow with the cut, and so do their pages.
	lo, hi := 0, len(cuts) // cuts[:lo] fit; cuts[hi:] do not
	for lo < hi {
		mid := (lo + hi) / 2
		if fits(body[:cuts[mid].at]) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	at := 0
	if lo > 0 {
		best := cuts[lo-1]
		at = best.at
		// Prefer the last paragraph end when it gives up little of the room.
		for i := lo - 1; i >= 0 && cuts[i].at >= best.at*3/4; i-- {
			if cuts[i].para {
				at = cuts[i].at
				break
			}
		}
	}
	head := strings.TrimRight(body[:at], "\n ")
	card.Body = joinParagraphs(head, answerFileNote)
	return card, strings.Trim(body[at:], "\n")
}

// cut is a place a markdown answer may be split: just after a line end outside any ``` code
// block; para when that line end closes a paragraph (a blank line follows or the block ends).
type cut struct {
	at   int
	para bool
}

// lineCuts lists the places body may be split, in order.
func lineCuts(body string) []cut {
	var out []cut
	inFence := false
	for i := 0; i < len(body); {
		end := strings.IndexByte(body[i:], '\n')
		if end < 0 {
			break
		}
		line := body[i : i+end]
		next := i + end + 1
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			inFence = !inFence
		}
		if !inFence {
			para := strings.TrimSpace(line) == "" || strings.HasPrefix(body[next:], "\n")
			out = append(out, cut{at: next, para: para})
		}
		i = next
	}
	return out
}

// sendRest sends the rest of a long answer as a file, once per run (StepFile); if the file
// cannot be sent, the rest follows as messages instead, so nothing of the answer is lost. The
// file goes where the answer went (the run's ReplyTo too), so an adapter can refuse a target a
// file cannot reach as the answer did — a Slack answer visible to one user only — and the rest
// then follows as messages to that same target.
func (d *Delivery) sendRest(ctx context.Context, ch Channel, c *runCard, rest string) {
	if c.fileSent || rest == "" {
		return
	}
	to := Target{Conv: c.conv, ReplyTo: c.replyTo}
	key := c.runID + ":" + StepFile
	// As for the closing message: an earlier attempt that intended the file and left no record
	// may have posted it; a platform recognising the key returns that post, others may show two.
	earlier := d.intend(ctx, c, StepFileIntent)
	var ref MessageRef
	err := withRateLimit(ctx, d.opt.MaxRetryWait, d.opt.RateLimitAttempts, func(ctx context.Context) error {
		var err error
		ref, err = ch.(FileSender).SendFile(ctx, to, File{Name: answerFileName, Data: []byte(rest + "\n"), Caption: answerFileCaption, Key: key})
		return err
	})
	if err != nil {
		d.m.OutboundError(c.conv.Platform, "file_failed")
		d.log.Warn("channels: sending the rest of a long answer as a file failed; sending it as messages", "run", c.runID, "err", err)
		err = withRateLimit(ctx, d.opt.MaxRetryWait, d.opt.RateLimitAttempts, func(ctx context.Context) error {
			var err error
			ref, err = ch.Send(ctx, to, Message{Text: rest, Key: key})
			return err
		})
		if err != nil {
			d.m.OutboundError(c.conv.Platform, "final_lost")
			d.log.Error("channels: the rest of a long answer could not be delivered", "run", c.runID, "err", err)
			return
		}
	}
	c.fileSent = true
	d.record(ctx, c.runID, StepFile, ref)
	d.countPossibleDouble(ch, c, StepFile, earlier)
}
