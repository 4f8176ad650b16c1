package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// longAnswer is an answer of about size bytes: numbered paragraphs, each unique, so a test can
// tell that every one arrived exactly once and in order.
func longAnswer(size int) (string, []string) {
	var paras []string
	n := 0
	for i := 1; n < size; i++ {
		p := fmt.Sprintf("P%04d: this paragraph of the long answer says something worth reading, and then a little more.", i)
		paras = append(paras, p)
		n += len(p) + 2
	}
	return strings.Join(paras, "\n\n"), paras
}

// TestLongAnswerSendsTheRestAsAFile proves a 50 KB answer stays readable: at most
// runs.max_answer_messages (3) messages, each within Telegram's 4,096 characters shown, then one
// answer.md document holding the rest — and nothing lost or repeated: every paragraph of the
// answer is in the messages or the file exactly once, in order.
func TestLongAnswerSendsTheRestAsAFile(t *testing.T) {
	t.Run("answered at once", func(t *testing.T) { testLongAnswer(t, 0) })
	// The answer is edited into the placeholder, its further messages sent after it.
	t.Run("after a placeholder", func(t *testing.T) { testLongAnswer(t, 1500*time.Millisecond) })
}

func testLongAnswer(t *testing.T, latency time.Duration) {
	answer, paras := longAnswer(50_000)
	e := newE2E(t, nil)
	e.model.SetFunc(func(modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Content: answer, ChunkSize: 4096, Latency: latency}
	})
	e.start()
	e.tg.PushPrivate(ann, "tell me everything")
	var got []telegramfake.Message
	waitFor(t, "the answer and its file", 20*time.Second, func() bool {
		got = e.tg.Posted(ann.ID)
		for _, m := range got {
			if m.Document != nil {
				return true
			}
		}
		return false
	})
	var texts []string
	var doc *telegramfake.Document
	for i, m := range got {
		if isPlaceholder(m) {
			t.Fatalf("message %d is still the placeholder", i)
		}
		if m.Document != nil {
			if doc != nil {
				t.Fatal("more than one document sent")
			}
			doc = m.Document
			continue
		}
		if doc != nil {
			t.Errorf("message %d comes after the file", i)
		}
		if n := utf16Len(visible(m)); n > telegramfake.MaxTextLen {
			t.Errorf("message %d shows %d characters, over the limit", i, n)
		}
		texts = append(texts, visible(m))
	}
	if len(texts) == 0 || len(texts) > e.cfg.Runs.MaxAnswerMessages {
		t.Errorf("%d messages before the file, want 1 to %d", len(texts), e.cfg.Runs.MaxAnswerMessages)
	}
	if doc.FileName != "answer.md" {
		t.Errorf("the file is named %q, want answer.md", doc.FileName)
	}
	if !strings.Contains(strings.Join(texts, "\n"), "answer.md") {
		t.Error("the messages do not say the rest is in the file")
	}
	// The paragraphs shown, then those in the file, must be the answer's, once each, in order.
	all := strings.Join(texts, "\n\n") + "\n\n" + string(doc.Data)
	pos := 0
	for i, p := range paras {
		j := strings.Index(all[pos:], p)
		if j < 0 {
			t.Fatalf("paragraph %d (%.6s) is missing or out of order", i+1, p)
		}
		pos += j + len(p)
		if strings.Count(all, p[:6]) != 1 {
			t.Fatalf("paragraph %d arrived %d times", i+1, strings.Count(all, p[:6]))
		}
	}
	if !strings.HasPrefix(string(doc.Data), paras[len(paras)-len(strings.Split(strings.TrimSpace(string(doc.Data)), "\n\n"))]) {
		t.Error("the file does not start at a paragraph")
	}
	t.Logf("%d bytes: %d messages (%d characters shown) and a file of %d bytes", len(answer), len(texts), utf16Len(strings.Join(texts, "")), len(doc.Data))
}
