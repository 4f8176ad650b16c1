package render

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// statusStyle is how each renderer shows a status.
type statusStyle struct {
	emoji string
	label string
	color int // Discord embed colour
}

var statusStyles = map[Status]statusStyle{
	StatusWorking:   {"⏳", "Working", 0x3498DB},
	StatusWaiting:   {"❓", "Waiting for your answer", 0xF1C40F},
	StatusDone:      {"✅", "Done", 0x2ECC71},
	StatusFailed:    {"❌", "Failed", 0xE74C3C},
	StatusCancelled: {"🚫", "Cancelled", 0x95A5A6},
}

// StatusColor is the Discord embed colour for a status (0 if unknown).
func StatusColor(s Status) int { return statusStyles[s].color }

// subagentIcon marks a subagent section by its stop reason.
func subagentIcon(s SubagentResult) string {
	switch s.StopReason {
	case "":
		return "⏳"
	case "completed":
		return "✅"
	case "aborted":
		return "🚫"
	case "error":
		return "❌"
	case "max-tokens":
		return "✂️"
	case "refusal":
		return "⛔"
	}
	return "▪️"
}

// subagentState is the stop reason, or "running" while there is none.
func subagentState(s SubagentResult) string {
	if s.Running() {
		return "running"
	}
	return s.StopReason
}

// formatElapsed writes a duration the way a chat footer wants it: 12s,
// 1m05s, 2h03m.
func formatElapsed(d time.Duration) string {
	d = d.Round(time.Second)
	s := int64(d / time.Second)
	if d < time.Minute {
		return strconv.FormatInt(s, 10) + "s" // every footer has one: no fmt
	}
	// two appends a number of at least two digits to b.
	two := func(b []byte, n int64) []byte {
		if n < 10 {
			b = append(b, '0')
		}
		return strconv.AppendInt(b, n, 10)
	}
	b := make([]byte, 0, 12)
	if d < time.Hour {
		b = strconv.AppendInt(b, s/60, 10)
		b = append(b, 'm')
		return string(append(two(b, s%60), 's'))
	}
	b = strconv.AppendInt(b, s/3600, 10)
	b = append(b, 'h')
	return string(append(two(b, s/60%60), 'm'))
}

// maxRunIDLen bounds the run id a footer shows.
const maxRunIDLen = 16

// footerParts are the plain pieces of a card's footer: the status label, the
// short run id and the elapsed time, those that are present.
func footerParts(c Card) (status, run, elapsed string) {
	status = statusStyles[c.Status].label
	if c.Footer.RunID != "" {
		run = truncate(NeutralizeMentions(c.Footer.RunID), maxRunIDLen)
	}
	if c.Footer.Elapsed > 0 {
		elapsed = formatElapsed(c.Footer.Elapsed)
	}
	return status, run, elapsed
}

// joinNonEmpty joins the non-empty parts with sep.
func joinNonEmpty(sep string, parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, sep)
}

// headline is the plain title line: status emoji and title.
func headline(c Card) string {
	return statusStyles[c.Status].emoji + " " + NeutralizeMentions(strings.TrimSpace(c.Title))
}

// optionRange is "1–3" for three options.
func optionRange(n int) string {
	if n == 1 {
		return "1"
	}
	return fmt.Sprintf("1–%d", n)
}
