package docs_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/config"
)

// block is one fenced code block of a Markdown page.
type block struct {
	info string // the opening fence's info string, e.g. "yaml"
	line int    // the opening fence's line, from 1
	text string
}

// fencedBlocks returns the page's fenced code blocks (``` or ~~~, three or more, the closing
// fence at least as long as the opening one, as CommonMark has it), so that a block quoted
// inside a longer fence is part of that block, not one of its own.
func fencedBlocks(page string) []block {
	var out []block
	var open string // the opening fence while inside a block
	var cur block
	var body []string
	for i, line := range strings.Split(page, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if len(line)-len(trimmed) > 3 {
			trimmed = "" // indented code, not a fence
		}
		if open == "" {
			if fence := fenceOf(trimmed); fence != "" {
				open, cur, body = fence, block{info: strings.TrimSpace(trimmed[len(fence):]), line: i + 1}, nil
			}
			continue
		}
		if fence := fenceOf(trimmed); fence != "" && fence[0] == open[0] && len(fence) >= len(open) && strings.TrimSpace(trimmed[len(fence):]) == "" {
			cur.text = strings.Join(body, "\n") + "\n"
			out = append(out, cur)
			open = ""
			continue
		}
		body = append(body, line)
	}
	return out
}

// fenceOf returns the run of three or more backticks or tildes line starts with, or "".
func fenceOf(line string) string {
	if line == "" || (line[0] != '`' && line[0] != '~') {
		return ""
	}
	n := len(line) - len(strings.TrimLeft(line, line[:1]))
	if n < 3 {
		return ""
	}
	return line[:n]
}

func TestFencedBlocksKeepQuotedFencesInside(t *testing.T) {
	page := "text\n```yaml\na: 1\n```\n\n`````text\n````\n```yaml\nnot: [a block\n```\n````\n`````\n  ~~~yaml  \nb: 2\n~~~~\n```yaml\nunclosed: 1\n"
	got := fencedBlocks(page)
	want := []block{
		{info: "yaml", line: 2, text: "a: 1\n"},
		{info: "text", line: 6, text: "````\n```yaml\nnot: [a block\n```\n````\n"},
		{info: "yaml", line: 13, text: "b: 2\n"},
	}
	if len(got) != len(want) {
		t.Fatalf("blocks %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestProfilesPageExamplesLoadAndValidate: every ```yaml block of docs/profiles.md is a
// configuration that config.Load reads, with nothing from the environment, and Validate
// accepts — as the page promises its readers, who copy them.
func TestProfilesPageExamplesLoadAndValidate(t *testing.T) {
	page, err := os.ReadFile("profiles.md")
	if err != nil {
		t.Fatal(err)
	}
	var examples []block
	for _, b := range fencedBlocks(string(page)) {
		if b.info == "yaml" || b.info == "yml" {
			examples = append(examples, b)
		}
	}
	// The page's examples: the endpoints, Slack, Discord, Telegram and the console.
	if len(examples) < 5 {
		t.Fatalf("profiles.md has %d yaml blocks, want the 5 examples at least: the page or the parser is wrong", len(examples))
	}
	for _, b := range examples {
		t.Run("line "+strconv.Itoa(b.line), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(b.text), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path, nil)
			if err != nil {
				t.Fatalf("profiles.md line %d does not load: %v\n%s", b.line, err, b.text)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("profiles.md line %d does not validate: %v\n%s", b.line, err, b.text)
			}
			if len(cfg.Profiles) == 0 {
				t.Errorf("profiles.md line %d configures no profile: every example here is about profiles", b.line)
			}
		})
	}
}
