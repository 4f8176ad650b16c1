package render

import (
	"fmt"
	"strings"
	"time"
)

// testKey signs every id in the tests; goldens are stable because HMAC is.
var testKey = mustKey("golden-test-key-0123456789abcdef")

func mustKey(s string) Key {
	k, err := NewKey([]byte(s))
	if err != nil {
		panic(err)
	}
	return k
}

const testToken = "01JCLARIFY7Q2M3N4P5R6S7T8V"

var footer = Footer{RunID: "r-7f3a9c", Elapsed: 83 * time.Second}

const markdownBody = `## Findings

The service is **healthy** overall, with *two* caveats and one ~~old~~ issue:

1. Latency on ` + "`/v1/search`" + ` rose after the deploy.
2. The cache hit rate fell:
   - from 92% to 71%
   - mostly on [the EU cluster](https://status.example.com/eu?view=cache&range=24h)

> Note: the dashboard lags by about 5 minutes.

` + "```go\nfunc hit(rate float64) bool {\n\treturn rate > 0.9 && rate <= 1\n}\n```" + `

| region | p95 ms | hit rate |
|--------|-------:|---------:|
| us     | 120    | 92%      |
| eu     | 340    | 71%      |

---

See <https://docs.example.com/runbook> for the runbook.`

func subagents(n int) []SubagentResult {
	reasons := []string{"completed", "completed", "error", "max-tokens", "aborted"}
	out := make([]SubagentResult, n)
	for i := range out {
		out[i] = SubagentResult{
			Name:       fmt.Sprintf("researcher-%02d", i+1),
			StopReason: reasons[i%len(reasons)],
			Summary:    fmt.Sprintf("Checked source %d: found **%d** relevant pages; see `notes-%d.md`.", i+1, i*3+1, i+1),
		}
		if i%2 == 0 {
			out[i].Structured = []Field{
				{Label: "verdict", Value: []string{"supported", "contradicted", "unclear"}[i%3], Inline: true},
				{Label: "confidence", Value: fmt.Sprintf("0.%d", 50+i), Inline: true},
				{Label: "sources", Value: fmt.Sprintf(`["https://example.com/%d","https://example.org/%d"]`, i, i), Inline: true},
			}
		}
	}
	return out
}

func longBody() string {
	var b strings.Builder
	b.WriteString("# A very long answer\n\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "Paragraph %d. %s\n\n", i+1, strings.Repeat("The quick brown fox jumps over the lazy dog. ", 6))
	}
	b.WriteString("```python\n")
	for i := 0; i < 250; i++ {
		fmt.Fprintf(&b, "print('line %03d of a very long code block that must be split across messages')\n", i)
	}
	b.WriteString("```\n\nThe end.")
	return b.String()
}

const unicodeBody = "Résumé — naïve café 🚀✨ 日本語のテキスト、中文字符 and العربية נכון.\n\n" +
	"- Emoji with skin tone 👍🏽 and family 👨‍👩‍👧‍👦\n- Combining: e\u0301 a\u0308\n- Astral: 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟘𝟙𝟚\n\n" +
	"`код` **жирный** _курсив_"

const escapingBody = "Tags <b>not bold</b> & <script>alert(\"x\")</script> a < b > c \"quoted\" 'single'" +
	"\n\n@everyone look! @here too, and @channel. <!channel> <!here> <!everyone> <@U123ABC> <@123456789> <@!42> <@&987654> mail me@here.com" +
	"\n\nLiteral \\*stars\\* and \\_underscores\\_ and a | pipe and a `tick` and &amp; entity &lt;tag&gt;" +
	"\n\n[evil link](javascript:alert(1)) [ok link](https://example.com/a_b?x=1&y=\"2\")"

// goldenCards are every card kind the golden tests render on every platform.
var goldenCards = []struct {
	name string
	card Card
}{
	{"working", Card{Title: "Looking into your question", Status: StatusWorking, Footer: footer,
		Actions: []Action{{Label: "Cancel", Style: StyleDanger, ID: ActionID{Kind: ActionButton, Token: "r-7f3a9c"}}}}},
	{"progress_subagents", Card{Title: "Researching", Status: StatusWorking, Body: "Delegated to three researchers.", Footer: footer,
		Subagents: []SubagentResult{
			{Name: "web-search", StopReason: "completed", Summary: "Found 4 sources."},
			{Name: "code-reader"},
			{Name: "summarizer"},
		}}},
	{"waiting_choice", Card{Title: "Which environment?", Status: StatusWaiting, Footer: footer,
		Form: &Form{Token: testToken, Question: "I can deploy to **one** environment now.", AllowFreeText: true,
			Fields: []FormField{{ID: "env", Label: "Environment", Kind: KindChoice, Options: []string{"staging", "production", "canary"}, Required: true}}}}},
	{"waiting_form", Card{Title: "A few details first", Status: StatusWaiting, Footer: footer,
		Form: &Form{Token: testToken, Question: "Before I write the report, tell me:", AllowFreeText: true, Step: 1,
			Fields: []FormField{
				{ID: "audience", Label: "Who is the audience?", Kind: KindChoice, Options: []string{"engineers", "executives", "customers"}, Required: true},
				{ID: "sections", Label: "Which sections?", Kind: KindMultiChoice, Options: []string{"summary", "timeline", "root cause", "actions"}, Required: true, Selected: []int{0, 2}},
				{ID: "notes", Label: "Anything to stress?", Kind: KindText},
				{ID: "send", Label: "Email it when done?", Kind: KindConfirm, Required: true},
			}}}},
	{"done_markdown", Card{Title: "Health report", Status: StatusDone, Body: markdownBody, Footer: footer,
		Fields: []Field{{Label: "Services", Value: "14", Inline: true}, {Label: "Alerts", Value: "2", Inline: true}, {Label: "Window", Value: "last 24 hours"}}}},
	{"done_20_subagents", Card{Title: "Fact check complete", Status: StatusDone, Body: "20 claims checked; **14** supported.", Footer: footer,
		Subagents: subagents(20)}},
	{"failed", Card{Title: "Could not finish", Status: StatusFailed, Body: "The model provider timed out three times. Try again in a minute.", Footer: footer}},
	{"cancelled", Card{Title: "Stopped", Status: StatusCancelled, Body: "Cancelled at your request.", Footer: Footer{RunID: "r-7f3a9c"}}},
	{"long_body", Card{Title: "Full transcript", Status: StatusDone, Body: longBody(), Footer: footer}},
	{"unicode", Card{Title: "Ünïcödé 🚀 日本語", Status: StatusDone, Body: unicodeBody, Footer: footer,
		Fields: []Field{{Label: "言語", Value: "日本語 🇯🇵", Inline: true}}}},
	{"escaping_mentions", Card{Title: "<b>@everyone</b> & <!channel>", Status: StatusDone, Body: escapingBody, Footer: footer,
		Fields:    []Field{{Label: "<@U999>", Value: "@here & <tag> \"q\"", Inline: true}},
		Subagents: []SubagentResult{{Name: "@everyone-bot", StopReason: "completed", Summary: "ping <@&1> @everyone", Structured: []Field{{Label: "<x>", Value: "a&b @here"}}}},
	}},
}
