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
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s" // nearly every footer's: without fmt
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
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
