package render

import (
	"strconv"
	"testing"
)

// TestKeptIsTakenOnceAndBounded proves a held rendering is taken once, only for an equal card,
// that a card without a run id is not held, and that renderings never taken do not pile up.
func TestKeptIsTakenOnceAndBounded(t *testing.T) {
	var k Kept[string]
	card := Card{Body: "x", Footer: Footer{RunID: "r1"}}
	k.Keep(&card, "rendered x")
	other := card
	other.Subagents = []SubagentResult{{Name: "s"}}
	if _, ok := k.Take(&other); ok {
		t.Error("a different card of the run took the held rendering")
	}
	k.Keep(&card, "rendered x")
	if v, ok := k.Take(&card); !ok || v != "rendered x" {
		t.Errorf("Take = %q, %v; want the held rendering", v, ok)
	}
	if _, ok := k.Take(&card); ok {
		t.Error("a rendering was taken twice")
	}
	noRun := Card{Body: "x"}
	k.Keep(&noRun, "x")
	if _, ok := k.Take(&noRun); ok {
		t.Error("a card without a run id was held")
	}
	for i := range 3 * maxKept {
		c := Card{Footer: Footer{RunID: strconv.Itoa(i)}}
		k.Keep(&c, "")
	}
	if n := len(k.cards); n > maxKept {
		t.Errorf("%d renderings held, want at most %d", n, maxKept)
	}
}
