package telegram

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
	"github.com/switchboard-bot/switchboard/render"
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

// TestSendFileBeforeAndWhileStartRuns proves an upload needs nothing Start sets: SendFile
// works on a channel not started yet (it used to dereference the library client Start made,
// and panic), and beside a Start running at the same time (under -race: the client is not
// written while uploads may read it).
func TestSendFileBeforeAndWhileStartRuns(t *testing.T) {
	fake := telegramfake.New(t)
	ch, _ := newChannel(t, fake, nil)
	stopAtEnd(t, ch)
	file := channels.File{Name: "answer.md", Data: []byte("# the rest")}
	if _, err := ch.SendFile(context.Background(), channels.Target{Conv: privateConv(42)}, file); err != nil {
		t.Fatalf("SendFile before Start: %v", err)
	}
	started := make(chan error, 1)
	go func() { started <- ch.Start(context.Background(), &recorder{}) }()
	_, sendErr := ch.SendFile(context.Background(), channels.Target{Conv: privateConv(42)}, file)
	if err := <-started; err != nil {
		t.Fatalf("Start: %v", err)
	}
	if sendErr != nil {
		t.Fatalf("SendFile while Start ran: %v", sendErr)
	}
	if n := len(fake.Posted(42)); n != 2 {
		t.Fatalf("%d documents posted, want 2", n)
	}
}

// TestSendFileErrorsAreReadAsCalls proves an upload's refusal is read by its status as any
// other call's is (the library's UploadFiles leaves the code out of its error): server errors
// are retried, a 429 is returned at once with its retry_after (delivery waits it out and sends
// again), a 403 is the chat the bot can no longer write to.
func TestSendFileErrorsAreReadAsCalls(t *testing.T) {
	h := start(t, nil)
	to := channels.Target{Conv: privateConv(42)}
	file := channels.File{Name: "answer.md", Data: []byte("the rest\n")}

	h.fake.FailChat(42, "sendDocument", 2, telegramfake.Fault{Status: 502, Description: "Bad Gateway"})
	if _, err := h.ch.SendFile(context.Background(), to, file); err != nil {
		t.Fatalf("two 502s and then success: SendFile = %v, want the third try's document", err)
	}
	h.fake.FailChat(42, "sendDocument", 1, telegramfake.Fault{Status: 429, RetryAfter: 1})
	if _, err := h.ch.SendFile(context.Background(), to, file); !rateLimitOf(err, time.Second) {
		t.Fatalf("a 429 with retry_after 1: SendFile = %v, want a RateLimitError of 1s", err)
	}
	if _, err := h.ch.SendFile(context.Background(), to, file); err != nil {
		t.Fatalf("SendFile after the 429: %v", err)
	}
	if n := len(h.fake.Posted(42)); n != 2 {
		t.Fatalf("%d documents posted, want 2", n)
	}
	h.fake.FailChat(42, "sendDocument", 1, telegramfake.Fault{Status: 403, Description: "Forbidden: bot was blocked by the user"})
	if _, err := h.ch.SendFile(context.Background(), to, file); !errors.Is(err, channels.ErrUnreachable) {
		t.Fatalf("a 403: SendFile = %v, want ErrUnreachable", err)
	}
	h.fake.FailChat(42, "sendDocument", 3, telegramfake.Fault{Status: 502, Description: "Bad Gateway"})
	_, err := h.ch.SendFile(context.Background(), to, file)
	if ae, ok := errors.AsType[*APIError](err); !ok || ae.Code != 502 {
		t.Fatalf("three 502s: SendFile = %v, want the Bot API's 502", err)
	}
}

// TestPagesThenSendSendsTheCardAsRendered proves a card counted by Pages and then sent is sent
// as rendering it afresh sends it, and that a different card of the same run sent after it is
// that card, never the one counted.
func TestPagesThenSendSendsTheCardAsRendered(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	card := render.Card{Title: "Answer", Status: render.StatusDone, Body: "The **answer** is 42 & more.", Footer: render.Footer{RunID: "01RUNPAGES"}}
	if _, err := h.ch.Send(ctx, channels.Target{Conv: privateConv(43)}, channels.Message{Card: &card}); err != nil {
		t.Fatal(err)
	}
	counted := card
	if n, err := h.ch.Pages(channels.Message{Card: &counted}); err != nil || n != 1 {
		t.Fatalf("Pages = %d, %v; want 1", n, err)
	}
	if _, err := h.ch.Send(ctx, channels.Target{Conv: privateConv(42)}, channels.Message{Card: &card}); err != nil {
		t.Fatal(err)
	}
	fresh, kept := h.fake.Posted(43), h.fake.Posted(42)
	if len(fresh) != 1 || len(kept) != 1 || kept[0].Text != fresh[0].Text || !strings.Contains(kept[0].Text, "42 &amp; more") {
		t.Fatalf("sent after Pages %+v, sent afresh %+v: want the same text", kept, fresh)
	}

	if _, err := h.ch.Pages(channels.Message{Card: &counted}); err != nil {
		t.Fatal(err)
	}
	changed := card
	changed.Body = "Changed after counting."
	if _, err := h.ch.Send(ctx, channels.Target{Conv: privateConv(42)}, channels.Message{Card: &changed}); err != nil {
		t.Fatal(err)
	}
	if p := h.fake.Posted(42); len(p) != 2 || !strings.Contains(p[1].Text, "Changed after counting.") || strings.Contains(p[1].Text, "42") {
		t.Fatalf("posted %+v, want the changed card", p)
	}
}
