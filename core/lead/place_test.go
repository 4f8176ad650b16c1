package lead_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/core/lead"
	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/core/profile"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// placeTeam is a Team whose runs from Slack channel C1 get the "support" profile (its own
// prompt, model and provider, no subagents, one turn of history, images seen) and the rest
// the default.
func placeTeam(t *testing.T, p llm.Provider, files lead.FileOptions, log ...*slog.Logger) *lead.Team {
	t.Helper()
	vision := true
	set, err := profile.New(profile.Profile{Name: profile.Default, Model: "default-model", Subagents: profile.Subagents{MaxDepth: 2, MaxConcurrent: 4}},
		map[string]profile.Partial{"support": {SystemPrompt: "You are the support desk.", Model: "support-model", Provider: "local",
			Vision: &vision, HistoryTurns: 1, Subagents: &profile.Subagents{}}},
		[]profile.Route{{Match: profile.Match{Platform: "slack", Channel: "C1"}, Profile: "support"}})
	if err != nil {
		t.Fatal(err)
	}
	opts := lead.Options{Model: "default-model", MaxDepth: 2, MaxConcurrent: 4, Profiles: set, Files: files}
	if len(log) > 0 {
		opts.Logger = log[0]
	}
	team, err := lead.NewTeam(p, newStore(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(team.Close)
	return team
}

func slackEnvelope(chat, text string) *runs.Envelope {
	env := envelope(runs.KindMessage, text)
	env.Conv = conv.Key{Platform: "slack", Workspace: "T1", Chat: chat}
	env.Identity.Platform = "slack"
	return env
}

// TestProfileShapesTheModelRequest: a run from a routed place is sent with its profile's
// prompt, model and provider, without the delegate tool where the profile has no subagents,
// with only its last turns of history; a run from elsewhere gets the default.
func TestProfileShapesTheModelRequest(t *testing.T) {
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply { return llm.Reply{Text: "answer " + lastMessage(req).Content} })
	team := placeTeam(t, p, lead.FileOptions{})
	for _, text := range []string{"first", "second"} {
		if _, err := team.HandleRun(context.Background(), runs.NewRun(slackEnvelope("C1", text), &collector{})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := team.HandleRun(context.Background(), runs.NewRun(slackEnvelope("C2", "elsewhere"), &collector{})); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	support, other := reqs[1], reqs[2]
	if support.System[0] != "You are the support desk." || support.Model != "support-model" || support.Provider != "local" || hasTool(support, "delegate") {
		t.Errorf("support request: system %q, model %q, provider %q, delegate offered %v", support.System[0], support.Model, support.Provider, hasTool(support, "delegate"))
	}
	// One turn of history: the first exchange and the new message, nothing older.
	if n := len(support.Messages); n != 3 || support.Messages[0].Content != "first" {
		t.Errorf("support request's history: %d messages, first %q; want the last turn and the message", n, support.Messages[0].Content)
	}
	if !isLead(other) || other.Model != "default-model" || other.Provider != "" || !hasTool(other, "delegate") {
		t.Errorf("default request: model %q, provider %q, delegate offered %v", other.Model, other.Provider, hasTool(other, "delegate"))
	}
}

// TestFilesReachTheModel: a message's image goes to a vision profile's request as an image,
// a text file's content as text, and a file that could not be downloaded is told to the
// model and, briefly, to the user ahead of the answer — never with its URL.
func TestFilesReachTheModel(t *testing.T) {
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	pngBytes := img.Bytes()
	fetch := func(_ context.Context, k conv.Key, a conv.Attachment, limit int64) ([]byte, error) {
		if k.Chat != "C1" {
			return nil, errors.New("wrong conversation")
		}
		switch a.Name {
		case "cat.png":
			return pngBytes, nil
		case "notes.txt":
			return []byte("remember the milk"), nil
		}
		return nil, fmt.Errorf("GET %s: connection reset", a.URL)
	}
	p := llm.ScriptFunc(func(req llm.Request) llm.Reply { return llm.Reply{Text: "seen"} })
	var logs syncBuffer
	team := placeTeam(t, p, lead.FileOptions{Fetch: fetch, MaxBytes: 1 << 20, MaxTextChars: 1000, MaxFiles: 5}, slog.New(slog.NewTextHandler(&logs, nil)))
	env := slackEnvelope("C1", "look")
	env.Attachments = []conv.Attachment{
		{Name: "cat.png", MIME: "image/png", Size: int64(len(pngBytes)), URL: "https://files.example/cat.png?t=SECRET"},
		{Name: "notes.txt", MIME: "text/plain", Size: 17, URL: "https://files.example/notes.txt?t=SECRET"},
		{Name: "lost.pdf", MIME: "application/pdf", Size: 10, URL: "https://files.example/lost.pdf?t=SECRET"},
	}
	sink := &collector{}
	if _, err := team.HandleRun(context.Background(), runs.NewRun(env, sink)); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls", len(reqs))
	}
	msg := lastMessage(reqs[0])
	if len(msg.Images) != 1 || msg.Images[0].MIME != "image/png" {
		t.Errorf("the vision profile's request carries %d images, want the PNG", len(msg.Images))
	}
	if !strings.Contains(msg.Content, "remember the milk") || !strings.Contains(msg.Content, "lost.pdf") || strings.Contains(msg.Content, "SECRET") {
		t.Errorf("the model read %q; want the text file, the failed file named, no URL", msg.Content)
	}
	if l := logs.String(); !strings.Contains(l, "could not be read") || !strings.Contains(l, "application/pdf") || strings.Contains(l, "SECRET") {
		t.Errorf("logs %q; want the failed download, its type, no URL", l)
	}
	final := sink.last()
	if final.Kind != runs.EventFinal || !strings.Contains(final.Text, "lost.pdf") || !strings.HasSuffix(final.Text, "seen") || strings.Contains(final.Text, "SECRET") {
		t.Errorf("final %+v; want a notice about lost.pdf ahead of the answer, no URL", final)
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
