package slack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
	"github.com/switchboard-bot/switchboard/render"
)

// TestWebAPICallsCarryOnlyDocumentedArguments proves every Web API method the adapter calls
// — each one the fake implements, driven through the adapter's own paths: start-up, an OAuth
// install, posts, edits, deletes, ephemeral answers, a modal, a stream, the thread status, the
// suggested prompts of both AI surfaces, a title, a file upload and the look-ups of sent
// messages — is sent only the arguments its method reference lists (slackfake.DocumentedArgs,
// each method's docs.slack.dev page cited there). Slack ignores an argument a method does not
// take without a word (chat.update was sent unfurl_links and unfurl_media, which only
// chat.postMessage takes), so the fake records them and this test fails on any.
func TestWebAPICallsCarryOnlyDocumentedArguments(t *testing.T) {
	var respondErr, openErr error
	form := render.Form{Token: "tok1", Question: "Details?", Fields: []render.FormField{{ID: "note", Label: "Note", Kind: render.KindText}}}
	rec := &recorder{respond: func(ctx context.Context, ch channels.Channel, in channels.Inbound) {
		c := ch.(*Channel)
		respondErr = c.RespondInteraction(ctx, in.Interaction, "Only you see this")
		openErr = c.OpenForm(ctx, in.Interaction, form)
	}}
	fake := slackfake.New(t)
	fake.SetPingInterval(100 * time.Millisecond)
	store := &MemoryInstallations{}
	h := &oauthHarness{store: store, harness: startWith(t, fake, func(c *Config) {
		c.Installations, c.ClientID, c.ClientSecret = store, slackfake.ClientID, slackfake.ClientSecret
		c.RedirectURL, c.StateKey = "https://bot.example.test/slack/oauth", testStateKey
		c.SuggestedPrompts = []string{"What can you do?"}
		c.AgentView = true
	}, rec)}
	mux := http.NewServeMux()
	mux.Handle("/slack/install", h.ch.InstallHandler())
	mux.Handle("/slack/oauth", h.ch.OAuthHandler())
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.srv.Close)
	ctx := context.Background()

	if status, _ := h.install(t, "T0OTHER"); status != http.StatusOK {
		t.Fatalf("install: %d", status)
	}

	// Posts, edits, deletes, a private answer, and the look-ups of a sent message.
	top, err := h.ch.Send(ctx, channels.Target{Conv: threadConv("")}, channels.Message{Text: "top", Key: "run1:0"})
	if err != nil {
		t.Fatal(err)
	}
	root := top.ID()
	to := channels.Target{Conv: threadConv(root), ReplyTo: root}
	ref, err := h.ch.Send(ctx, to, channels.Message{Text: strings.Repeat("word ", 9000), Key: "run2:0"})
	if err != nil || len(ref.IDs) < 2 {
		t.Fatalf("Send: %v %+v", err, ref)
	}
	since := time.Now().Add(-time.Minute)
	if _, found, err := h.ch.FindSent(ctx, channels.Target{Conv: threadConv("")}, "run1:0", since); err != nil || !found { // conversations.history
		t.Fatalf("FindSent at the top level: %v %v", found, err)
	}
	if _, found, err := h.ch.FindSent(ctx, to, "run2:0", since); err != nil || !found { // conversations.replies
		t.Fatalf("FindSent in the thread: %v %v", found, err)
	}
	if _, err := h.ch.Edit(ctx, ref, channels.Message{Text: "short now"}); err != nil { // chat.update, chat.delete
		t.Fatalf("Edit: %v", err)
	}
	if _, err := h.ch.Send(ctx, channels.Target{Conv: threadConv(root), ReplyTo: ephemeralPrefix + ann}, channels.Message{Text: "just you"}); err != nil {
		t.Fatalf("ephemeral Send: %v", err)
	}

	// A click answered privately, which opens a modal.
	fake.PushAction(slackfake.Action{User: ann, Channel: "C1", MessageTS: ref.ID(), ThreadTS: root, ActionID: "choose", Value: "0"})
	h.waitInbound(t, 1)
	if respondErr != nil || openErr != nil {
		t.Fatalf("RespondInteraction: %v, OpenForm: %v", respondErr, openErr)
	}

	// A stream in a DM thread, with its status set and cleared.
	dmRoot := fake.NewTS()
	dm := channels.Target{Conv: dmThread(dmRoot), ReplyTo: dmRoot, User: annID}
	if err := h.ch.Typing(ctx, dm); err != nil {
		t.Fatal(err)
	}
	sref, err := h.ch.StartStream(ctx, dm, channels.StreamUpdate{Plan: "Working", Tasks: []channels.StreamTask{{ID: "a1", Title: "Look", Status: channels.TaskRunning}}})
	if err != nil {
		t.Fatalf("StartStream: %v", err)
	}
	if err := h.ch.AppendStream(ctx, sref, channels.StreamUpdate{Text: "Hello "}); err != nil {
		t.Fatal(err)
	}
	if err := h.ch.StopStream(ctx, sref, channels.StreamUpdate{Text: "world."}); err != nil {
		t.Fatal(err)
	}

	// The suggested prompts of both surfaces, and the titles of their threads.
	assistantRoot := fake.NewTS()
	fake.Send("events_api", fake.AssistantThreadStarted(ann, "D2", assistantRoot))
	fake.PushMessage(slackfake.Msg{Channel: "D2", ChannelType: "im", User: ann, Text: "plan my week", ThreadTS: assistantRoot})
	fake.Send("events_api", fake.AppHomeOpened(ann, "D1", "messages"))
	fake.PushMessage(slackfake.Msg{Channel: "D1", ChannelType: "im", User: ann, Text: "what's new?"})
	eventually(t, "the prompts and titles", func() bool {
		return len(fake.CallsOf("assistant.threads.setSuggestedPrompts")) == 2 && len(fake.CallsOf("assistant.threads.setTitle")) == 2
	})

	// A file.
	if _, err := h.ch.SendFile(ctx, to, channels.File{Name: "answer.md", Data: []byte("the rest"), Caption: "The rest."}); err != nil {
		t.Fatalf("SendFile: %v", err)
	}

	called := map[string]bool{}
	for _, c := range fake.Calls() {
		called[c.Method] = true
		if len(c.Undocumented) > 0 {
			t.Errorf("%s was sent %v, which its reference does not list (params %v)", c.Method, c.Undocumented, c.Params)
		}
	}
	for _, m := range slackfake.DocumentedMethods() {
		if !called[m] {
			t.Errorf("%s was not called: this test no longer covers it", m)
		}
	}
}
