package telegram

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// TestSendFileUploadsADocument proves SendFile uploads the bytes as a named document (a
// multipart sendDocument through the library) into the conversation's chat and forum topic,
// with its caption cut to Telegram's 1,024 characters, and that a refusal comes back as an error.
func TestSendFileUploadsADocument(t *testing.T) {
	h := start(t, nil)
	data := bytes.Repeat([]byte("## the rest\n\nmore of the answer\n"), 2000) // 64 KB
	topic := conv.Key{Platform: "telegram", Chat: "-1001", Thread: "7"}
	caption := strings.Repeat("c", 2000)
	ref, err := h.ch.SendFile(context.Background(), channels.Target{Conv: topic}, channels.File{Name: "answer.md", Data: data, Caption: caption})
	if err != nil {
		t.Fatalf("SendFile: %v", err)
	}
	posted := h.fake.Posted(-1001)
	if len(posted) != 1 || strconv.Itoa(posted[0].ID) != ref.ID() {
		t.Fatalf("posted %+v, ref %+v", posted, ref)
	}
	m := posted[0]
	if m.Document == nil || m.Document.FileName != "answer.md" || !bytes.Equal(m.Document.Data, data) {
		t.Fatalf("the document is %+v, want answer.md with the %d bytes", m.Document, len(data))
	}
	if m.ThreadID != 7 {
		t.Errorf("sent to topic %d, want 7", m.ThreadID)
	}
	if n := len([]rune(m.Text)); n != MaxCaption || !strings.HasSuffix(m.Text, "…") {
		t.Errorf("the caption is %d characters, want it cut to %d", n, MaxCaption)
	}
	if n, err := h.ch.Pages(channels.Message{Text: strings.Repeat("word ", 3000)}); err != nil || n != 4 {
		t.Errorf("Pages of 15,000 characters = %d, %v; want 4", n, err)
	}

	h.fake.FailChat(42, "sendDocument", 1, telegramfake.Fault{Status: 400, Description: "Bad Request: file must be non-empty"})
	_, err = h.ch.SendFile(context.Background(), channels.Target{Conv: privateConv(42)}, channels.File{Name: "answer.md", Data: data, Caption: ""})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Method != "sendDocument" {
		t.Fatalf("err = %v, want the Bot API's refusal", err)
	}
}
