package render

import (
	"fmt"
	"testing"
)

func TestScratch(t *testing.T) {
	md := "# Title *x*\n\nHello **bold** and _it_ `co<de>` [link](https://ex.com/a?b=1&c=2) @everyone <@123> a & b < c\n\n- one\n- two\n  - nested `x`\n  - more\n3. three\n\n> quote **b**\n> > nested\n\n```go\nfunc main() {}\n```\n\n| a | bb |\n|---|---|\n| 1 | 2 |\n\n~~gone~~ <https://auto.link> \\*lit\\*\n"
	for _, d := range []Dialect{DialectPlain, DialectSlack, DialectDiscord, DialectTelegram} {
		fmt.Printf("==== %s\n%s\n", d, ConvertMarkdown(md, d))
	}
	long := "```python\n"
	for i := 0; i < 30; i++ {
		long += fmt.Sprintf("print('line %d')\n", i)
	}
	long += "```\n\nafter para"
	for _, p := range Chunk(long, 200, DialectDiscord) {
		fmt.Printf("--[%d]\n%s\n", Width(p), p)
	}
	tg := ConvertMarkdown(long+"\n\n**bold "+fmt.Sprint(make([]int, 40))+"**", DialectTelegram)
	for _, p := range Chunk(tg, 120, DialectTelegram) {
		fmt.Printf("--[%d]\n%s\n", Width(p), p)
	}
}
