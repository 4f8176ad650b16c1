package telegramfake

import (
	"net/url"
	"strings"
	"testing"
)

// TestSendMessageDraftFollowsTheBotAPI checks sendMessageDraft's parameters and limits as the
// Bot API documents them (https://core.telegram.org/bots/api#sendmessagedraft): private chats
// only, a non-zero draft_id, text of at most 4,096 characters after entities parsing (HTML or
// entities), an optional message_thread_id; True on success.
func TestSendMessageDraftFollowsTheBotAPI(t *testing.T) {
	tests := []struct {
		name   string
		params url.Values
		code   int
		desc   string
	}{
		{"private chat", url.Values{"chat_id": {"42"}, "draft_id": {"7"}, "text": {"Hel"}}, 0, ""},
		{"HTML", url.Values{"chat_id": {"42"}, "draft_id": {"7"}, "text": {"<b>Hel</b>"}, "parse_mode": {"HTML"}}, 0, ""},
		{"entities", url.Values{"chat_id": {"42"}, "draft_id": {"7"}, "text": {"Hel"}, "entities": {`[{"type":"bold","offset":0,"length":3}]`}}, 0, ""},
		{"topic", url.Values{"chat_id": {"42"}, "message_thread_id": {"5"}, "draft_id": {"7"}, "text": {"Hel"}}, 0, ""},
		{"empty text shows Thinking…", url.Values{"chat_id": {"42"}, "draft_id": {"7"}}, 0, ""},
		{"group", url.Values{"chat_id": {"-100"}, "draft_id": {"7"}, "text": {"Hel"}}, 400, "TEXTDRAFT_PEER_INVALID"},
		{"no chat", url.Values{"draft_id": {"7"}, "text": {"Hel"}}, 400, "chat not found"},
		{"zero draft id", url.Values{"chat_id": {"42"}, "draft_id": {"0"}, "text": {"Hel"}}, 400, "draft_id"},
		{"no draft id", url.Values{"chat_id": {"42"}, "text": {"Hel"}}, 400, "draft_id"},
		{"too long", url.Values{"chat_id": {"42"}, "draft_id": {"7"}, "text": {strings.Repeat("x", MaxTextLen+1)}}, 400, "too long"},
		{"4096 shown with tags", url.Values{"chat_id": {"42"}, "draft_id": {"7"}, "text": {"<i>" + strings.Repeat("x", MaxTextLen) + "</i>"}, "parse_mode": {"HTML"}}, 0, ""},
		{"bad HTML", url.Values{"chat_id": {"42"}, "draft_id": {"7"}, "text": {"<b>x"}, "parse_mode": {"HTML"}}, 400, "can't parse entities"},
		{"entity past the text", url.Values{"chat_id": {"42"}, "draft_id": {"7"}, "text": {"Hel"}, "entities": {`[{"type":"bold","offset":2,"length":3}]`}}, 400, "can't parse entities"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t)
			if tt.code != 0 {
				s.AllowViolations() // a refused body, sent on purpose
			}
			a := call(t, s, "sendMessageDraft", tt.params)
			if tt.code == 0 {
				if !a.OK || string(a.Result) != "true" {
					t.Fatalf("answer %+v, want ok and true", a)
				}
				if ds := s.Drafts(42); len(ds) != 1 {
					t.Fatalf("%d drafts recorded, want 1", len(ds))
				}
				return
			}
			if a.OK || a.ErrorCode != tt.code || !strings.Contains(a.Description, tt.desc) {
				t.Fatalf("answer %d %q, want %d with %q", a.ErrorCode, a.Description, tt.code, tt.desc)
			}
		})
	}
}

// TestDraftShowsUntilAMessageInItsTopic checks what ShownDraft reports: the latest draft of a
// chat's topic, until a message arrives in that topic — one in another topic leaves it.
func TestDraftShowsUntilAMessageInItsTopic(t *testing.T) {
	s := New(t)
	for _, text := range []string{"He", "Hello"} {
		call(t, s, "sendMessageDraft", url.Values{"chat_id": {"42"}, "message_thread_id": {"5"}, "draft_id": {"7"}, "text": {text}})
	}
	d, ok := s.ShownDraft(42, 5)
	if !ok || d.Visible != "Hello" || d.ThreadID != 5 || d.DraftID != 7 {
		t.Fatalf("shown %+v (%v), want the latest draft of topic 5", d, ok)
	}
	if _, ok := s.ShownDraft(42, 0); ok {
		t.Fatal("the draft of topic 5 shows outside it")
	}
	call(t, s, "sendMessage", url.Values{"chat_id": {"42"}, "text": {"elsewhere"}})
	if _, ok := s.ShownDraft(42, 5); !ok {
		t.Fatal("a message outside the topic removed its draft")
	}
	call(t, s, "sendMessage", url.Values{"chat_id": {"42"}, "message_thread_id": {"5"}, "text": {"Hello!"}})
	if _, ok := s.ShownDraft(42, 5); ok {
		t.Fatal("the draft still shows after the message in its topic")
	}
	if n := len(s.Drafts(42)); n != 2 {
		t.Fatalf("%d drafts recorded, want 2", n)
	}
}

// TestUnsupportedMethodAnswers404 checks a method made unknown answers as a Bot API server
// that predates it.
func TestUnsupportedMethodAnswers404(t *testing.T) {
	s := New(t)
	s.Unsupported("sendMessageDraft")
	a := call(t, s, "sendMessageDraft", url.Values{"chat_id": {"42"}, "draft_id": {"7"}, "text": {"x"}})
	if a.OK || a.ErrorCode != 404 {
		t.Fatalf("answer %+v, want 404", a)
	}
	if len(s.Drafts(42)) != 0 {
		t.Fatal("a refused draft was recorded")
	}
}

// TestPrivateTopicMessage checks a message pushed into a private chat's topic carries the topic
// as Telegram sends it, and that a click on a message there shows no forum.
func TestPrivateTopicMessage(t *testing.T) {
	s := New(t)
	u := User{ID: 42, FirstName: "Ann"}
	s.PushPrivateTopic(u, 5, "hi")
	raw := s.TakeUpdates()
	if len(raw) != 1 || !strings.Contains(string(raw[0]), `"message_thread_id":5,"is_topic_message":true`) ||
		!strings.Contains(string(raw[0]), `"type":"private"`) {
		t.Fatalf("update %s, want a private message in topic 5", raw)
	}
	a := call(t, s, "sendMessage", url.Values{"chat_id": {"42"}, "message_thread_id": {"5"}, "text": {"answer"}})
	if !a.OK {
		t.Fatalf("sendMessage: %+v", a)
	}
	s.PushCallback(42, 2, u, "data")
	raw = s.TakeUpdates()
	if len(raw) != 1 || strings.Contains(string(raw[0]), "is_forum") {
		t.Fatalf("callback %s, want no forum in a private chat", raw)
	}
}
