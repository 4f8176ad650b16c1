package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/internal/forms"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/render"
)

// StepFile holds the JSON MessageRef of the file carrying the rest of a long answer, once sent;
// StepFileIntent is its write-ahead intent (as StepFinalIntent is the closing message's).
const (
	StepFile       = "file"
	StepFileIntent = StepFile + ".intent"
)

// StepFinalHead holds a long answer's closing message (the JSON answerHead: its MessageRef and
// the rest still to send) from the moment it is delivered until the rest is: a try of the run
// that finds it, because the platform refused the rest, sends the rest only.
const StepFinalHead = StepFinal + ".head"

// answerHead is a long answer's closing message, delivered, and the rest of the answer.
type answerHead struct {
	Ref  channels.MessageRef `json:"ref"`
	Rest string              `json:"rest"`
}

// decodeHead reads a StepFinalHead record; a record it cannot read is no head (the run's next
// try delivers the whole answer again, as before the record).
func decodeHead(b []byte, conv conv.Key) answerHead {
	var h answerHead
	if json.Unmarshal(b, &h) != nil || h.Ref.ID() == "" || h.Rest == "" {
		return answerHead{}
	}
	if h.Ref.Conv.IsZero() {
		h.Ref.Conv = conv
	}
	return h
}

// recordHead records c.head (StepFinalHead). A failed write is logged: a try after the rest is
// refused then shows the closing message again, as it did without the record.
func (cl closer) recordHead(ctx context.Context, c *runCard) {
	b, err := json.Marshal(c.head)
	if err != nil {
		return
	}
	if _, _, err := cl.d.rs.storeRecord(ctx, c.runID, StepFinalHead, b); err != nil {
		cl.d.log.Warn("channels: recording a long answer's delivered head failed", "run", c.runID, "err", err)
	}
}

// finishRest ends a run whose long answer's closing message an earlier try delivered while the
// platform refused the rest: the rest is sent, and the closing message recorded as the run's.
func (cl closer) finishRest(ctx context.Context, ch channels.Channel, c *runCard, ev runs.Event) error {
	if err := cl.sendRest(ctx, ch, c, c.head.Rest); err != nil {
		return fmt.Errorf("channels: delivering the rest of run %s's answer: %w", c.runID, err)
	}
	cl.d.log.Debug("channels: the rest of a long answer delivered on a later try", "run", c.runID, "kind", ev.Kind)
	if _, second := cl.d.rs.record(ctx, c.runID, StepFinal, c.head.Ref); second && cl.d.sn.dropSecond(ctx, ch, c, StepFinal, c.head.Ref) {
		return nil // another attempt's closing message, recorded first, is the one shown
	}
	cl.dropStrayCard(ctx, ch, c, c.head.Ref, c.ref.ID())
	return nil
}

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
func splitAnswer(ch channels.Channel, card render.Card, limit int) (render.Card, string) {
	pg, ok := ch.(channels.Pager)
	if _, files := ch.(channels.FileSender); !ok || !files || limit <= 0 {
		return card, ""
	}
	fits := func(head string) bool {
		c := card
		c.Body = forms.JoinParagraphs(head, answerFileNote)
		n, err := pg.Pages(channels.Message{Card: &c})
		return err == nil && n <= limit
	}
	if n, err := pg.Pages(channels.Message{Card: &card}); err != nil || n <= limit {
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
	card.Body = forms.JoinParagraphs(head, answerFileNote)
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
// cannot be sent, the rest follows as messages instead. When those are refused too, it returns
// the error: the run is tried again (see finishRest), so nothing of the answer is lost. The
// file goes where the answer went (the run's ReplyTo too), so an adapter can refuse a target a
// file cannot reach as the answer did — a Slack answer visible to one user only — and the rest
// then follows as messages to that same target.
func (cl closer) sendRest(ctx context.Context, ch channels.Channel, c *runCard, rest string) error {
	if c.fileSent || rest == "" {
		return nil
	}
	to := channels.Target{Conv: c.conv, ReplyTo: c.replyTo}
	key := c.runID + ":" + StepFile
	// As for the closing message: an earlier attempt that intended the file and left no record
	// may have posted it; a platform recognising the key returns that post, others may show two.
	earlier := cl.d.rs.intend(ctx, c, StepFileIntent)
	if c.restRefused {
		earlier = time.Time{} // this process's last try was refused both ways: nothing posted
	}
	var ref channels.MessageRef
	err := channels.RetryRateLimited(ctx, cl.d.opt.MaxRetryWait, cl.d.opt.RateLimitAttempts, func(ctx context.Context) error {
		var err error
		ref, err = ch.(channels.FileSender).SendFile(ctx, to, channels.File{Name: answerFileName, Data: []byte(rest + "\n"), Caption: answerFileCaption, Key: key})
		return err
	})
	fileErr := err
	if err != nil {
		cl.d.m.OutboundError(c.conv.Platform, "file_failed")
		cl.d.log.Warn("channels: sending the rest of a long answer as a file failed; sending it as messages", "run", c.runID, "err", err)
		err = channels.RetryRateLimited(ctx, cl.d.opt.MaxRetryWait, cl.d.opt.RateLimitAttempts, func(ctx context.Context) error {
			var err error
			ref, err = cl.d.sn.sendWhole(ctx, ch, to, channels.Message{Text: rest, Key: key})
			return err
		})
		if errors.Is(err, channels.ErrUnreachable) {
			// The bot can no longer write there: trying the run again would fail the same way.
			cl.d.m.OutboundError(c.conv.Platform, "unreachable")
			cl.d.log.Warn("channels: the conversation cannot be reached; the rest of a long answer is given up", "run", c.runID, "err", err)
			return nil
		}
		if err != nil {
			c.restRefused = !mayHavePosted(fileErr) && !mayHavePosted(err)
			cl.d.m.OutboundError(c.conv.Platform, "rest_failed")
			cl.d.log.Debug("channels: the rest of a long answer could not be delivered", "run", c.runID, "err", err)
			return err
		}
	}
	c.fileSent = true
	cl.d.rs.record(ctx, c.runID, StepFile, ref)
	cl.d.rs.countPossibleDouble(ch, c, StepFile, earlier)
	return nil
}
