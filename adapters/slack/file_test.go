package slack

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
	"github.com/switchboard-bot/switchboard/render"
)

// TestSendFileUploadsAndSharesInTheThread proves SendFile goes through Slack's external upload
// (an upload URL, the bytes posted there, the upload completed) and shares the file in the
// conversation's channel and thread with the caption as its comment — escaped and cut to
// MaxCaption — and that the ref names the file.
func TestSendFileUploadsAndSharesInTheThread(t *testing.T) {
	h := start(t, nil)
	root := h.fake.NewTS()
	data := bytes.Repeat([]byte("## the rest\n\nmore of the answer\n"), 2000) // 64 KB
	caption := "<!channel> & " + strings.Repeat("c", 4000)
	ref, err := h.ch.SendFile(context.Background(), channels.Target{Conv: threadConv(root)}, channels.File{Name: "answer.md", Data: data, Caption: caption})
	if err != nil {
		t.Fatalf("SendFile: %v", err)
	}
	ups := h.fake.Uploads()
	if len(ups) != 1 || ref.ID() != ups[0].ID || ref.Conv != threadConv(root) {
		t.Fatalf("uploads %+v, ref %+v", ups, ref)
	}
	u := ups[0]
	if u.Name != "answer.md" || !bytes.Equal(u.Data, data) {
		t.Fatalf("the file is %q with %d bytes, want answer.md with %d", u.Name, len(u.Data), len(data))
	}
	if u.Channel != "C1" || u.ThreadTS != root || u.Team != slackfake.TeamID {
		t.Errorf("shared in %s/%s by %s, want C1/%s", u.Channel, u.ThreadTS, u.Team, root)
	}
	if !strings.HasPrefix(u.InitialComment, "&lt;!channel&gt; &amp; ") || !strings.HasSuffix(u.InitialComment, "…") {
		t.Errorf("the comment is not the escaped caption: %.40q…", u.InitialComment)
	}
	if n := len([]rune(strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(u.InitialComment))); n != MaxCaption {
		t.Errorf("the comment shows %d characters, want it cut to %d", n, MaxCaption)
	}
	posted := h.fake.Posted("C1")
	if len(posted) != 1 || posted[0].ThreadTS != root || len(posted[0].Files) != 1 {
		t.Errorf("the thread shows %+v, want the one message sharing the file", posted)
	}

	// A DM's top level: no thread.
	dm := conv.Key{Platform: "slack", Workspace: slackfake.TeamID, Chat: "D1"}
	if _, err := h.ch.SendFile(context.Background(), channels.Target{Conv: dm}, channels.File{Name: "answer.md", Data: data, Caption: "The rest."}); err != nil {
		t.Fatal(err)
	}
	if u := h.fake.Uploads()[1]; u.Channel != "D1" || u.ThreadTS != "" || u.InitialComment != "The rest." {
		t.Errorf("DM upload %s/%q with %q", u.Channel, u.ThreadTS, u.InitialComment)
	}
}

// TestPagesCountsWhatSendPosts proves Pages is the number of messages Send posts for the same
// message: text (12 sections of 3,000 characters a message) and cards (50 blocks a message).
func TestPagesCountsWhatSendPosts(t *testing.T) {
	h := start(t, nil)
	var paras []string
	for range 1500 {
		paras = append(paras, "A paragraph of an answer that is long enough to fill some of a section, and a bit.")
	}
	long := strings.Join(paras, "\n\n") // about 130,000 characters
	card := render.Card{Title: "Answer", Status: render.StatusDone, Body: long}
	for _, m := range []channels.Message{{Text: "short"}, {Text: long}, {Card: &card}} {
		n, err := h.ch.Pages(m)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := h.ch.Send(context.Background(), channels.Target{Conv: threadConv(h.fake.NewTS())}, m)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(ref.IDs) {
			t.Errorf("Pages = %d, Send posted %d", n, len(ref.IDs))
		}
	}
	if n, _ := h.ch.Pages(channels.Message{Text: long}); n < 3 {
		t.Errorf("Pages of 130,000 characters of text = %d, want several", n)
	}
	bad := render.Card{}
	if _, err := h.ch.Pages(channels.Message{Card: &bad}); !errors.Is(err, channels.ErrCardRefused) {
		t.Errorf("Pages of an invalid card: %v, want ErrCardRefused", err)
	}
}

// TestSendFileErrors proves each way an upload fails comes back as a clear error, classified
// (*APIError naming the step, *channels.RateLimitError) and holding neither the token nor the
// upload URL, with no file shared: a refusal, a rate limit, a failed byte upload, a private
// (ephemeral) target. (A rate limit on the byte upload: TestSendFileRateLimitIsHandedBack.)
func TestSendFileErrors(t *testing.T) {
	data := []byte("the rest of the answer\n")
	target := channels.Target{Conv: threadConv("1700000000.000100")}
	cases := []struct {
		name   string
		inject func(f *slackfake.Server)
		to     channels.Target
		check  func(t *testing.T, err error)
	}{
		{"upload refused", func(f *slackfake.Server) {
			f.FailNext(methodUploadURL, 1, slackfake.Fault{Error: "file_uploads_disabled"})
		}, target, func(t *testing.T, err error) {
			var ae *APIError
			if !errors.As(err, &ae) || ae.Method != methodUploadURL || ae.Code != "file_uploads_disabled" {
				t.Fatalf("err = %v, want files.getUploadURLExternal's refusal", err)
			}
		}},
		{"rate limited past the wait", func(f *slackfake.Server) {
			f.RateLimit(methodComplete, -1, 60)
		}, target, func(t *testing.T, err error) {
			var rl *channels.RateLimitError
			if !errors.As(err, &rl) || rl.RetryAfter.Seconds() != 60 {
				t.Fatalf("err = %v, want a RateLimitError of 60 s", err)
			}
		}},
		{"upload URL failing", func(f *slackfake.Server) {
			f.FailNext(slackfake.UploadMethod, 1, slackfake.Fault{Status: 500})
		}, target, func(t *testing.T, err error) {
			var ae *APIError
			if !errors.As(err, &ae) || ae.Method != methodUpload || ae.Code != "http_500" {
				t.Fatalf("err = %v, want the upload URL's HTTP 500", err)
			}
		}},
		{"private answer", nil, channels.Target{Conv: threadConv(""), ReplyTo: ephemeralPrefix + ann}, func(t *testing.T, err error) {
			if !errors.Is(err, errPrivateFile) {
				t.Fatalf("err = %v, want the private target refused", err)
			}
		}},
		{"completion refused", func(f *slackfake.Server) {
			f.FailChannel("C1", methodComplete, 1, slackfake.Fault{Error: "not_in_channel"})
		}, target, func(t *testing.T, err error) {
			if !errors.Is(err, channels.ErrUnreachable) {
				t.Fatalf("err = %v, want ErrUnreachable", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, nil)
			if tc.inject != nil {
				tc.inject(h.fake)
			}
			_, err := h.ch.SendFile(context.Background(), tc.to, channels.File{Name: "answer.md", Data: data, Caption: "The rest."})
			if err == nil {
				t.Fatal("SendFile succeeded")
			}
			tc.check(t, err)
			if strings.Contains(err.Error(), h.fake.BotToken()) || strings.Contains(err.Error(), h.fake.URL()) {
				t.Errorf("the error shows a secret or the upload URL: %v", err)
			}
			if n := len(h.fake.Uploads()); n != 0 {
				t.Errorf("%d files shared, want none", n)
			}
		})
	}

	t.Run("empty file", func(t *testing.T) {
		h := start(t, nil)
		if _, err := h.ch.SendFile(context.Background(), target, channels.File{Name: "answer.md", Data: nil, Caption: ""}); err == nil {
			t.Fatal("an empty file was sent")
		}
		if n := h.fake.Count(methodUploadURL); n != 0 {
			t.Errorf("%d calls for an empty file", n)
		}
	})
}

// TestUploadErrorsHideTheUploadURL proves an HTTP client error on the byte upload — which quotes
// the one-time upload URL — comes back without it, still wrapping what it wrapped.
func TestUploadErrorsHideTheUploadURL(t *testing.T) {
	const u = "https://files.slack.com/upload/v1/CwABAAAAXAoAAZnoSecretPart"
	cause := &url.Error{Op: "Post", URL: u, Err: context.DeadlineExceeded}
	err := hideUploadURL(cause, u)
	if strings.Contains(err.Error(), "SecretPart") || !strings.Contains(err.Error(), "[upload URL]") {
		t.Errorf("the error shows %q", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the error no longer wraps its cause: %v", err)
	}
	plain := errors.New("slack: upload_url: http_500")
	if hideUploadURL(plain, u) != plain {
		t.Error("an error without the URL was changed")
	}
}

// TestPagesThenSendSendsTheCardAsRendered proves a card counted by Pages and then sent is posted
// as sending it afresh posts it, and that a different card of the same run sent after it is
// that card, never the one counted.
func TestPagesThenSendSendsTheCardAsRendered(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	card := render.Card{Title: "Answer", Status: render.StatusDone, Body: "The **answer** is 42.", Footer: render.Footer{RunID: "01RUNPAGES"}}
	send := func(c render.Card) slackfake.Message {
		t.Helper()
		ref, err := h.ch.Send(ctx, channels.Target{Conv: threadConv(h.fake.NewTS())}, channels.Message{Card: &c})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range h.fake.Posted("C1") {
			if m.TS == ref.ID() {
				return m
			}
		}
		t.Fatalf("the message %s was not posted", ref.ID())
		return slackfake.Message{}
	}
	fresh := send(card)
	if _, err := h.ch.Pages(channels.Message{Card: &card}); err != nil {
		t.Fatal(err)
	}
	kept := send(card)
	if kept.Blocks != fresh.Blocks || kept.Text != fresh.Text || !strings.Contains(kept.Blocks, "42") {
		t.Fatalf("sent after Pages %q, sent afresh %q: want the same", kept.Blocks, fresh.Blocks)
	}
	if _, err := h.ch.Pages(channels.Message{Card: &card}); err != nil {
		t.Fatal(err)
	}
	changed := card
	changed.Body = "Changed after counting."
	if m := send(changed); !strings.Contains(m.Blocks, "Changed after counting.") || strings.Contains(m.Blocks, "42") {
		t.Fatalf("posted %q, want the changed card", m.Blocks)
	}
}
