package render

import (
	"fmt"
	"html"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestChunkKeepsShortTextWhole(t *testing.T) {
	for _, d := range []Dialect{DialectPlain, DialectSlack, DialectDiscord, DialectTelegram} {
		got := Chunk("\nhello <b>x</b>\n", 100, d)
		want := "hello <b>x</b>"
		if len(got) != 1 || got[0] != want {
			t.Fatalf("%s: %q", d, got)
		}
		if got := Chunk("\n\n", 100, d); len(got) != 0 {
			t.Fatalf("%s: blank input gave %q", d, got)
		}
	}
}

func TestChunkPrefersParagraphThenLineThenSpace(t *testing.T) {
	para := strings.Repeat("a", 60) + "\n\n" + strings.Repeat("b", 30)
	if got := Chunk(para, 80, DialectPlain); len(got) != 2 || got[0] != strings.Repeat("a", 60) {
		t.Fatalf("paragraph cut: %q", got)
	}
	lines := strings.Repeat("a", 50) + "\n" + strings.Repeat("b", 20) + " " + strings.Repeat("c", 20)
	if got := Chunk(lines, 80, DialectPlain); got[0] != strings.Repeat("a", 50) {
		t.Fatalf("line cut: %q", got)
	}
	words := strings.Repeat("word ", 30)
	for _, p := range Chunk(words, 64, DialectPlain) {
		if strings.HasPrefix(p, "ord") || strings.HasSuffix(p, "wor") {
			t.Fatalf("cut inside a word: %q", p)
		}
	}
}

func TestChunkNeverSplitsInsideACodeBlock(t *testing.T) {
	var b strings.Builder
	b.WriteString("intro\n\n```python\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "print(%d)\n", i)
	}
	b.WriteString("```\n\noutro")
	pieces := Chunk(b.String(), 300, DialectDiscord)
	if len(pieces) < 5 {
		t.Fatalf("expected several pieces, got %d", len(pieces))
	}
	var code []string
	for i, p := range pieces {
		if Width(p) > 300 {
			t.Fatalf("piece %d is %d long", i, Width(p))
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Fatalf("piece %d has an unclosed fence:\n%s", i, p)
		}
		if i > 0 && i < len(pieces)-1 && !strings.HasPrefix(p, "```python\n") {
			t.Fatalf("piece %d does not reopen the fence with its language:\n%s", i, p)
		}
		for _, line := range strings.Split(p, "\n") {
			if strings.HasPrefix(line, "print(") {
				code = append(code, line)
			}
		}
	}
	if len(code) != 200 {
		t.Fatalf("code lines lost or split: %d", len(code))
	}
}

func TestChunkOneHugeCodeLineStillFits(t *testing.T) {
	text := "```\n" + strings.Repeat("x", 1000) + "\n```"
	total := 0
	for _, p := range Chunk(text, 200, DialectSlack) {
		if Width(p) > 200 || !strings.HasPrefix(p, "```\n") || !strings.HasSuffix(p, "```") {
			t.Fatalf("bad piece %q", p)
		}
		total += strings.Count(p, "x")
	}
	if total != 1000 {
		t.Fatalf("lost code: %d", total)
	}
}

func TestChunkNeverSplitsRunesEntitiesOrTags(t *testing.T) {
	tests := []struct {
		name string
		text string
		d    Dialect
	}{
		{"astral runes", strings.Repeat("𝔘👨‍👩‍👧", 200), DialectPlain},
		{"telegram entities", strings.Repeat("a&amp;b&lt;c&#128512;", 100), DialectTelegram},
		{"slack entities and links", strings.Repeat("x &gt; <https://a.io/x|link> ", 60), DialectSlack},
		{"telegram tags", strings.Repeat(`<a href="https://e.io/x">ab</a> `, 80), DialectTelegram},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range Chunk(tt.text, 97, tt.d) {
				if !utf8.ValidString(p) || VisibleWidth(p, tt.d) > 97 {
					t.Fatalf("bad piece %q", p)
				}
				if tt.d == DialectTelegram {
					if err := validTelegramHTML(p); err != nil {
						t.Fatalf("%v in %q", err, p)
					}
				}
				if tt.d == DialectSlack && strings.Count(p, "<") != strings.Count(p, ">") {
					t.Fatalf("split link in %q", p)
				}
				if i := strings.LastIndexByte(p, '&'); i >= 0 && !strings.Contains(p[i:], ";") {
					t.Fatalf("split entity in %q", p)
				}
			}
		})
	}
}

func TestChunkClosesAndReopensTelegramTags(t *testing.T) {
	text := "<b>" + strings.Repeat("bold words ", 30) + "</b> tail"
	pieces := Chunk(text, 100, DialectTelegram)
	if len(pieces) < 3 {
		t.Fatalf("want several pieces, got %q", pieces)
	}
	for i, p := range pieces {
		if err := validTelegramHTML(p); err != nil {
			t.Fatalf("piece %d: %v: %q", i, err, p)
		}
		if i < len(pieces)-1 && !strings.HasPrefix(p, "<b>") {
			t.Fatalf("piece %d lost the bold: %q", i, p)
		}
	}
	if got := Chunk("a</b><i>b", 100, DialectTelegram); len(got) != 1 || got[0] != "a<i>b</i>" {
		t.Fatalf("unbalanced input not balanced: %q", got)
	}
}

func TestChunkRaisesTinyLimits(t *testing.T) {
	pieces := Chunk(strings.Repeat("a", 500), 1, DialectPlain)
	for _, p := range pieces[:len(pieces)-1] {
		if Width(p) != MinChunkLimit {
			t.Fatalf("piece of %d", Width(p))
		}
	}
}

func FuzzChunk(f *testing.F) {
	f.Add("```go\nx\n```\n\n<b>a &amp; b</b>", 64, uint8(0))
	f.Add("<pre><code class=\"language-go\">x\ny</code></pre>", 70, uint8(3))
	f.Add(strings.Repeat("<b><i>", 50)+"x", 64, uint8(3))
	f.Add("<https://a.io|x> &gt;", 64, uint8(1))
	f.Fuzz(func(t *testing.T, text string, limit int, dialect uint8) {
		d := Dialect(dialect % 4)
		if limit > 5000 || limit < -5000 {
			limit %= 5000
		}
		eff := max(limit, MinChunkLimit)
		for _, p := range Chunk(text, limit, d) {
			if !utf8.ValidString(p) || VisibleWidth(p, d) > eff || strings.TrimSpace(p) == "" {
				t.Fatalf("limit %d: bad piece %q", eff, p)
			}
		}
	})
}

// TestChunksSplitByVisibleText proves Telegram HTML is cut by what the user sees, not by the
// length of its markup: markup-heavy text fills each piece up to the limit of shown characters
// (Telegram's limit applies after entities are parsed), nothing shown is lost or repeated, and
// a code block that fits in a piece is kept whole rather than cut where the limit falls.
func TestChunksSplitByVisibleText(t *testing.T) {
	t.Run("markup is not counted", func(t *testing.T) {
		unit := `<b>bold</b> <i>it</i> <a href="https://example.com/a/rather/long/path?q=1">link</a> &amp; <code>x</code>` + "\n"
		text := strings.Repeat(unit, 1200)
		shown := VisibleWidth(text, DialectTelegram)
		pieces := Chunk(text, TelegramMaxText, DialectTelegram)
		if want := shown/TelegramMaxText + 1; len(pieces) > want {
			t.Errorf("%d pieces for %d shown characters (%d of markup), want at most %d", len(pieces), shown, Width(text), want)
		}
		var all strings.Builder
		for i, p := range pieces {
			if n := VisibleWidth(p, DialectTelegram); n > TelegramMaxText || i < len(pieces)-1 && n < TelegramMaxText*9/10 {
				t.Errorf("piece %d shows %d characters, want close to and at most %d", i, n, TelegramMaxText)
			}
			if err := validTelegramHTML(p); err != nil {
				t.Fatalf("piece %d: %v", i, err)
			}
			all.WriteString(shownText(p) + "\n")
		}
		if got, want := strings.Fields(all.String()), strings.Fields(shownText(text)); !slicesEqual(got, want) {
			t.Errorf("the pieces show %d words, the text %d: something was lost or repeated", len(got), len(want))
		}
	})
	code := func(open, close string) string {
		var b strings.Builder
		b.WriteString(open)
		for i := range 40 {
			fmt.Fprintf(&b, "line %02d of the code block\n", i)
		}
		return b.String() + close
	}
	for _, tc := range []struct {
		name  string
		d     Dialect
		block string
	}{
		{"telegram pre", DialectTelegram, code(`<pre><code class="language-go">`, "</code></pre>")},
		{"markdown fence", DialectDiscord, code("```go\n", "```")},
	} {
		t.Run(tc.name+" kept whole", func(t *testing.T) {
			text := strings.Repeat("some words before the code. ", 18) + "\n\n" + tc.block + "\n\nafter the code"
			pieces := Chunk(text, 1400, tc.d)
			whole := 0
			for _, p := range pieces {
				if strings.Contains(p, "line 00 of") != strings.Contains(p, "line 39 of") {
					t.Errorf("the code block was cut:\n%s", p)
				}
				if strings.Contains(p, "line 00 of") {
					whole++
				}
			}
			if whole != 1 {
				t.Errorf("the code block is in %d pieces whole, want 1: %q", whole, pieces)
			}
		})
	}
}

// shownText is what Telegram HTML shows: tags dropped, entities decoded.
func shownText(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return html.UnescapeString(b.String())
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzChunkWhole checks Chunk's shortcut for Telegram HTML that fits whole (wholeTelegram)
// against the chunker's walk: the same pieces.
func FuzzChunkWhole(f *testing.F) {
	f.Add("<b>Echo</b>\n\necho: m1 c2\n\n<i>done · run <code>01J</code></i>", 4096)
	f.Add("\n<b>a</b> &amp; <a href=\"https://x.io\">x</a>\n", 64)
	f.Add("<b><i>x</i></b> <pre><code class=\"language-go\">y</code></pre>", 4096)
	f.Add("  \n ", 100)
	f.Add("0 ", 64)                                           // the chunker cuts trailing white space
	f.Add("<b>0000</B>00000000000<i 0000·0000000></i>", 1139) // and writes a close tag as </name>
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit > 5000 || limit < -5000 {
			limit %= 5000
		}
		limit = max(limit, MinChunkLimit)
		if !utf8.ValidString(text) || len(text) > limit || !wholeTelegram(text) {
			return
		}
		got, want := Chunk(text, limit, DialectTelegram), chunkAll(text, limit, DialectTelegram)
		if !slices.Equal(got, want) {
			t.Fatalf("Chunk(%q) = %q, the chunker's walk %q", text, got, want)
		}
	})
}

func TestChunkWholeTelegram(t *testing.T) {
	for text, whole := range map[string]bool{
		"<b>a</b> <i>b <code>c</code></i>": true,
		"plain &amp; text":                 true,
		"<b>a":                             false, // left open
		"a</b>":                            false, // closes nothing
		"<b>a</i>":                         false, // closes another
		"<B>a</b>":                         false, // a name the chunker lowercases
		"<b>a</B>":                         false, // a close tag the chunker rewrites
		"<br/>":                            false, // closes itself
		"a < b":                            false, // not a tag
		"<b\n>a</b>":                       false, // not a tag either
		"<>":                               false,
		"</>":                              false,
	} {
		if got := wholeTelegram(text); got != whole {
			t.Errorf("wholeTelegram(%q) = %v, want %v", text, got, whole)
		}
		if whole && !slices.Equal(Chunk(text, 4096, DialectTelegram), chunkAll(text, 4096, DialectTelegram)) {
			t.Errorf("Chunk(%q) differs from the chunker's walk", text)
		}
	}
}
