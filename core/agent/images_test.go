package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/switchboard-bot/switchboard/core/agent"
	"github.com/switchboard-bot/switchboard/core/llm"
)

// TestImagesGoToTheModelNotToStorage: the images of an input reach every request of its turn as
// the user message's images, and an encoded event carries the message's text only.
func TestImagesGoToTheModelNotToStorage(t *testing.T) {
	p := llm.NewScripted(llm.Reply{Text: "a cat"}, llm.Reply{Text: "still a cat"})
	_, a := newAgent(t, p, agent.CreateOptions{})
	png := []byte("\x89PNG\r\n\x1a\nIMAGEBYTES")
	if err := a.SendInput(context.Background(), agent.Input{Content: "what is this?", Images: []llm.Image{{MIME: "image/png", Data: png}}}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, a)
	_ = a.Send("and now?")
	waitIdle(t, a)

	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	first := reqs[0].Messages[len(reqs[0].Messages)-1]
	if first.Role != llm.RoleUser || len(first.Images) != 1 || first.Images[0].MIME != "image/png" || !bytes.Equal(first.Images[0].Data, png) {
		t.Fatalf("first request's user message %+v, want the image", first)
	}
	// The next turn's request still shows the earlier message with its image (the session is
	// in memory) and its own message without one.
	second := reqs[1].Messages
	if len(second[0].Images) != 1 || len(second[len(second)-1].Images) != 0 {
		t.Fatalf("second request's images: first %d, last %d; want 1 and 0", len(second[0].Images), len(second[len(second)-1].Images))
	}
	for _, e := range a.Session().Events() {
		if e.Kind != agent.KindUserMessage {
			continue
		}
		enc, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(enc, []byte("IMAGEBYTES")) || bytes.Contains(enc, []byte("image")) {
			t.Fatalf("an encoded user message carries its image: %s", enc)
		}
	}
}
