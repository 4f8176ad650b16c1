package telegram

import (
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/render"
)

// converted is what pieces does with text outside the plain-text fast path.
func converted(text string) []string {
	return render.Chunk(render.ConvertMarkdown(text, render.DialectTelegram), MaxText, render.DialectTelegram)
}

// unmarkedSeeds are texts on both sides of unmarked's line.
var unmarkedSeeds = []string{
	"echo: m3 c12", "Hello world", "Done. 3 files, 2 dirs; ok?", "Wow!", "a", "x1.5", "Hi: there",
	"", " lead", "trail ", "two  spaces", "1. list", "- item", "# head", "*em*", "_em_", "a_b_c",
	"`code`", "a<b", "a&b", "a&amp;b", "@everyone", "hi @here", "x|y|z", "~~gone~~", "a\nb",
	"line\n", "[l](http://x)", "https://example.com", "a\\b", "quote \"x\"", "it's", "a---b",
	"==", "a  ", "café", "A!!!", "B...", "www.example.com", "1) x", "Z: 1.2.3",
	strings.Repeat("a", MaxText), strings.Repeat("a", MaxText+1), strings.Repeat("ab ", 2000) + "c",
}

func TestUnmarkedMatchesConversion(t *testing.T) {
	for _, text := range unmarkedSeeds {
		name := text
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			if !unmarked(text) {
				return // the full conversion path handles it
			}
			if got := converted(text); len(got) != 1 || got[0] != text {
				t.Errorf("unmarked(%q) is true but conversion gives %q", text, got)
			}
		})
	}
}

func TestUnmarkedRefusesMarkup(t *testing.T) {
	for _, text := range []string{"", " lead", "trail ", "two  spaces", "1. list", "*em*", "a<b", "a&b",
		"@everyone", "a\nb", "x|y", "~~s~~", "`c`", "[l](u)", "café", strings.Repeat("a", MaxText+1)} {
		t.Run(text[:min(len(text), 20)], func(t *testing.T) {
			if unmarked(text) {
				t.Errorf("unmarked(%q) = true, want false", text)
			}
		})
	}
}

func TestUnmarkedAcceptsPlainAnswers(t *testing.T) {
	for _, text := range []string{"echo: m3 c12", "Hello world", "Done. 3 files, 2 dirs; ok?", strings.Repeat("a", MaxText)} {
		t.Run(text[:min(len(text), 20)], func(t *testing.T) {
			if !unmarked(text) {
				t.Errorf("unmarked(%q) = false, want true", text)
			}
		})
	}
}

// FuzzUnmarked checks that whatever unmarked lets through is exactly what the markdown
// conversion and chunking would have sent.
func FuzzUnmarked(f *testing.F) {
	for _, s := range unmarkedSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !unmarked(text) {
			return
		}
		if got := converted(text); len(got) != 1 || got[0] != text {
			t.Errorf("unmarked(%q) is true but conversion gives %q", text, got)
		}
	})
}
