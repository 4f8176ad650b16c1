package render

import "testing"

// BenchmarkRender20Subagents renders the 20-subagent result card (with
// structured values) on each platform.
func BenchmarkRender20Subagents(b *testing.B) {
	card := Card{Title: "Fact check complete", Status: StatusDone, Body: markdownBody, Footer: footer, Subagents: subagents(20)}
	b.Run("slack", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Slack(card, testKey); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("discord", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Discord(card, testKey); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("telegram", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Telegram(card, testKey); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(Plain(card)) == 0 {
				b.Fatal("no output")
			}
		}
	})
}

// BenchmarkConvertShortAnswer converts a one-line answer, the commonest reply, to Telegram HTML.
func BenchmarkConvertShortAnswer(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = ConvertMarkdown("echo: m12 c34 — the answer is 42.", DialectTelegram)
	}
}

// BenchmarkChunkShortTelegram measures Chunk on a short answer as render.Telegram writes it:
// the text fits whole, so it is one piece (wholeTelegram) without the chunker's walk, which
// chunkAll still measures.
func BenchmarkChunkShortTelegram(b *testing.B) {
	text := "<b>Answer</b>\n\nThe <b>short</b> answer, with <code>code</code> and <a href=\"https://example.com/x\">a link</a> &amp; more.\n\n<i>done · run <code>01KBQ0Z3M4</code> · 2s</i>"
	b.Run("Chunk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Chunk(text, TelegramMaxText, DialectTelegram)
		}
	})
	b.Run("walk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			chunkAll(text, TelegramMaxText, DialectTelegram)
		}
	})
}
