package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// checkGolden compares got with testdata/name.golden, rewriting it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden (run go test ./render/... -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; run go test ./render/... -update and review the diff\n--- got ---\n%s", path, got)
	}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func report(t *testing.T, v violations) {
	t.Helper()
	for _, s := range v {
		t.Error(s)
	}
}

// TestGoldenCardsEveryPlatform renders every card kind on every platform,
// compares with the golden files and checks each output against the
// platform's limits, escaping rules and mention safety.
func TestGoldenCardsEveryPlatform(t *testing.T) {
	for _, gc := range goldenCards {
		t.Run(gc.name+"/slack", func(t *testing.T) {
			msgs, err := Slack(gc.card, testKey)
			if err != nil {
				t.Fatal(err)
			}
			report(t, validateSlack(msgs))
			out := map[string]any{"messages": msgs}
			if gc.card.Form != nil {
				view, err := SlackModal(gc.card, testKey)
				if err != nil {
					t.Fatal(err)
				}
				report(t, validateSlackView(view))
				out["modal"] = view
			}
			checkGolden(t, gc.name+".slack", marshal(t, out))
		})
		t.Run(gc.name+"/discord", func(t *testing.T) {
			msgs, err := Discord(gc.card, testKey)
			if err != nil {
				t.Fatal(err)
			}
			report(t, validateDiscord(msgs))
			out := map[string]any{"messages": msgs}
			if gc.card.Form != nil {
				m, err := DiscordFormModal(gc.card, testKey, false)
				if err != nil {
					t.Fatal(err)
				}
				report(t, validateDiscordModal(m))
				out["modal"] = m
			}
			checkGolden(t, gc.name+".discord", marshal(t, out))
		})
		t.Run(gc.name+"/telegram", func(t *testing.T) {
			msgs, err := Telegram(gc.card, testKey)
			if err != nil {
				t.Fatal(err)
			}
			report(t, validateTelegram(msgs))
			checkGolden(t, gc.name+".telegram", marshal(t, msgs))
		})
		t.Run(gc.name+"/plain", func(t *testing.T) {
			pieces := Plain(gc.card)
			report(t, validatePlain(pieces))
			checkGolden(t, gc.name+".plain", []byte(strings.Join(pieces, "\n\n========== next message ==========\n\n")+"\n"))
		})
	}
}
