package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/config"
	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
)

// The bad-input catalogue: what the outside world can hand the bot at each entry point, and
// what comes of it. Every entry is a row of a table test below, run against the real app (or
// the real command line): the input never panics the process, never loses the good messages
// around it, and gets the outcome the row names. Entry points: the Telegram Bot API's updates
// (polling), the Telegram webhook, what a user types and clicks, the command line and the
// configuration, and the model's output.

// TestBadInputCatalogueTelegramUpdates feeds malformed and unexpected updates through
// getUpdates, each in a chat of its own followed by a good message there: the bad one gets the
// row's outcome, the good one its one answer, and polling never stops.
func TestBadInputCatalogueTelegramUpdates(t *testing.T) {
	t.Parallel()
	e := newE2E(t, nil)
	e.start()
	type row struct {
		name string
		// push queues the bad input in chat (a private chat with user chat).
		push func(tg *telegramfake.Server, chat int64)
		// replies is how many messages the bot posts for the bad input; want is in the first.
		replies int
		want    string
	}
	user := func(chat int64) telegramfake.User { return telegramfake.User{ID: chat, FirstName: "Bad"} }
	private := func(chat int64) map[string]any {
		return map[string]any{"id": chat, "type": "private", "first_name": "Bad"}
	}
	from := func(chat int64) map[string]any {
		return map[string]any{"id": chat, "is_bot": false, "first_name": "Bad"}
	}
	raw := func(s string) func(*telegramfake.Server, int64) {
		return func(tg *telegramfake.Server, _ int64) { tg.PushVerbatim([]byte(s)) }
	}
	msg := func(fields map[string]any) func(*telegramfake.Server, int64) {
		return func(tg *telegramfake.Server, chat int64) {
			m := map[string]any{"message_id": 1, "date": 1, "chat": private(chat), "from": from(chat)}
			for k, v := range fields {
				m[k] = v
			}
			tg.PushRaw(map[string]any{"message": m})
		}
	}
	text := func(s string) func(*telegramfake.Server, int64) {
		return func(tg *telegramfake.Server, chat int64) { tg.PushPrivate(user(chat), s) }
	}
	rows := []row{
		{name: "a JSON array", push: raw(`[1,2,3]`)},
		{name: "a JSON string", push: raw(`"hello"`)},
		{name: "no update_id", push: raw(`{"message":{"message_id":1,"text":"x"}}`)},
		{name: "update_id a string", push: raw(`{"update_id":"x","message":{}}`)},
		{name: "empty object", push: raw(`{}`)},
		{name: "message without chat", push: func(tg *telegramfake.Server, _ int64) {
			tg.PushRaw(map[string]any{"message": map[string]any{"message_id": 1, "date": 1, "text": "no chat"}})
		}},
		{name: "message without sender", push: func(tg *telegramfake.Server, chat int64) {
			tg.PushRaw(map[string]any{"message": map[string]any{"message_id": 1, "date": 1, "chat": private(chat), "text": "who"}})
		}},
		{name: "chat id a string", push: msg(map[string]any{"chat": map[string]any{"id": "x", "type": "private"}, "text": "x"})},
		{name: "text a number", push: msg(map[string]any{"text": 42})},
		{name: "sticker, no text", push: msg(map[string]any{"sticker": map[string]any{"file_id": "f", "width": 1, "height": 1}})},
		{name: "entity past the end of the text", push: msg(map[string]any{"text": "@x",
			"entities": []map[string]any{{"type": "mention", "offset": 5, "length": 40}}}), replies: 1, want: "echo: @"},
		{name: "entity with negative offset", push: msg(map[string]any{"text": "hi",
			"entities": []map[string]any{{"type": "bot_command", "offset": -3, "length": 2}}}), replies: 1, want: "echo: hi"},
		{name: "text with invalid UTF-8", push: text("caf\xe9 \xff"), replies: 1, want: "echo: caf"},
		{name: "not JSON", push: raw(`{"update_id":`)},
		{name: "text of NUL bytes", push: text("a\x00b"), replies: 1, want: "echo: a"},
		{name: "only spaces", push: text("    ")},
		{name: "oversized message", push: text(strings.Repeat("long ", 2000)), replies: 1, want: "too long"},
		{name: "unknown command", push: text("/frobnicate now"), replies: 1, want: "/frobnicate"},
		{name: "admin command from a non-admin", push: text("/pause"), replies: 1, want: "admin"},
		{name: "/allow without an id", push: text("/allow"), replies: 1, want: "admin"},
		{name: "/model with too many words", push: text("/model a b c d e f g h"), replies: 1, want: ""},
		{name: "edited message", push: func(tg *telegramfake.Server, chat int64) {
			tg.PushRaw(map[string]any{"edited_message": map[string]any{"message_id": 1, "date": 1, "edit_date": 2,
				"chat": private(chat), "from": from(chat), "text": "edited"}})
		}},
		{name: "unknown update kind", push: func(tg *telegramfake.Server, chat int64) {
			tg.PushRaw(map[string]any{"message_reaction_count": map[string]any{"chat": private(chat)}})
		}},
		{name: "callback with data that is no id of ours", push: func(tg *telegramfake.Server, chat int64) {
			tg.PushCallback(chat, 1, user(chat), "not-an-action")
		}},
		{name: "callback with a forged signature", push: func(tg *telegramfake.Server, chat int64) {
			tg.PushCallback(chat, 1, user(chat), "c1.AAAAAAAAAAAAAAAAAAAAAA.forged")
		}},
		{name: "callback with empty data", push: func(tg *telegramfake.Server, chat int64) {
			tg.PushCallback(chat, 1, user(chat), "")
		}},
		{name: "callback on no message", push: func(tg *telegramfake.Server, chat int64) {
			tg.PushRaw(map[string]any{"callback_query": map[string]any{"id": "q-none", "from": from(chat), "data": "x"}})
		}},
	}
	first := int64(900_000)
	for i, r := range rows {
		r.push(e.tg, first+int64(i))
	}
	for i, r := range rows {
		chat := first + int64(i)
		if r.replies > 0 {
			waitFor(t, r.name+": its reply", 15*time.Second, func() bool { return answered(e.tg, chat, r.replies) })
			if got := visible(e.tg.Posted(chat)[0]); !strings.Contains(strings.ToLower(got), strings.ToLower(r.want)) {
				t.Errorf("%s: the bot said %q, want it to contain %q", r.name, got, r.want)
			}
		}
		e.tg.PushPrivate(user(chat), "still there?")
	}
	for i, r := range rows {
		chat := first + int64(i)
		got := e.waitAnswers(chat, r.replies+1)
		if last := visible(got[len(got)-1]); !strings.Contains(last, "echo: still there?") {
			t.Errorf("%s: the good message after it got %q", r.name, last)
		}
	}
	if logs := e.logs.String(); strings.Contains(logs, "panic") {
		t.Errorf("the logs mention a panic:\n%s", logs)
	}
}

// TestBadInputCatalogueTelegramWebhook posts bad deliveries to the webhook: a wrong or missing
// secret is refused with 401; a body that is not an update is answered 200 (so Telegram stops
// redelivering it ahead of the good ones) and becomes no run; the good delivery after them is
// answered.
func TestBadInputCatalogueTelegramWebhook(t *testing.T) {
	t.Parallel()
	const secret = "catalogue_webhook-secret"
	e := newE2E(t, func(c *config.Config) {
		c.Telegram.Mode, c.Telegram.WebhookURL, c.Telegram.WebhookSecret = config.TelegramWebhook, "https://bot.example/tg", secret
	})
	r := e.start()
	url := "http://" + r.listener.Addr().String() + "/tg"
	rows := []struct {
		name, method, secret, body string
		want                       int
	}{
		{"wrong secret", http.MethodPost, "nope", `{"update_id":1}`, http.StatusUnauthorized},
		{"no secret", http.MethodPost, "", `{"update_id":1}`, http.StatusUnauthorized},
		{"secret in another case", http.MethodPost, strings.ToUpper(secret), `{"update_id":1}`, http.StatusUnauthorized},
		{"GET instead of POST", http.MethodGet, secret, "", http.StatusMethodNotAllowed},
		{"empty body", http.MethodPost, secret, "", http.StatusOK},
		{"not JSON", http.MethodPost, secret, "hello", http.StatusOK},
		{"truncated JSON", http.MethodPost, secret, `{"update_id": 5, "message": {`, http.StatusOK},
		{"a JSON array", http.MethodPost, secret, `[{"update_id":1}]`, http.StatusOK},
		{"update without a message", http.MethodPost, secret, `{"update_id": 7}`, http.StatusOK},
		{"message without a chat", http.MethodPost, secret, `{"update_id": 8, "message": {"message_id": 1, "text": "x"}}`, http.StatusOK},
	}
	for _, row := range rows {
		req, _ := http.NewRequest(row.method, url, strings.NewReader(row.body))
		if row.secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", row.secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", row.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != row.want {
			t.Errorf("%s: %d, want %d", row.name, resp.StatusCode, row.want)
		}
	}
	ann := telegramfake.User{ID: 42, FirstName: "Ann"}
	e.tg.PushPrivate(ann, "after the bad ones")
	for _, u := range e.tg.TakeUpdates() {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(u))
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := e.waitAnswers(42, 1); !strings.Contains(visible(got[0]), "echo: after the bad ones") {
		t.Errorf("the good delivery got %q", visible(got[0]))
	}
	if n := len(e.model.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1: a bad delivery became a run", n)
	}
}

// TestBadInputCatalogueCommandLine: bad arguments and bad configuration values are refused
// before anything starts, with exit status 2 and the offending key or argument named.
func TestBadInputCatalogueCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	token := "BOT_TELEGRAM__TOKEN=123456:abcdef"
	rows := []struct {
		name    string
		args    []string
		environ []string
		want    string
	}{
		{"unknown command", []string{"frobnicate"}, nil, `unknown command "frobnicate"`},
		{"unknown flag", []string{"run", "-x"}, nil, "flag provided but not defined"},
		{"a stray argument", []string{"run", "extra"}, nil, `unexpected argument "extra"`},
		{"-c without a file", []string{"run", "-c"}, nil, "flag needs an argument"},
		{"a config file that is missing", []string{"run", "-c", filepath.Join(dir, "nope.yaml")}, nil, "nope.yaml"},
		{"a config file that is not YAML", []string{"run", "-c", file("bad.yaml", "runs: [workers\n")}, nil, "invalid YAML"},
		{"a config file that is a list", []string{"run", "-c", file("list.yaml", "- a\n- b\n")}, nil, "invalid YAML"},
		{"an unknown key in the file", []string{"run", "-c", file("typo.yaml", "runs: {wrokers: 3}\n")}, []string{token}, "wrokers"},
		{"an unknown environment key", []string{"run"}, []string{token, "BOT_RUNS__WROKERS=3"}, "WROKERS"},
		{"workers not a number", []string{"run"}, []string{token, "BOT_RUNS__WORKERS=many"}, "runs.workers"},
		{"no workers", []string{"run"}, []string{token, "BOT_RUNS__WORKERS=0"}, "runs.workers"},
		{"a duration without a unit", []string{"run"}, []string{token, "BOT_LLM__TIMEOUT=5"}, "llm.timeout"},
		{"a negative lease", []string{"run"}, []string{token, "BOT_RUNS__LEASE=-1s"}, "runs.lease"},
		{"http.addr without a port", []string{"run"}, []string{token, "BOT_HTTP__ADDR=localhost"}, "http.addr"},
		{"redis.url of another scheme", []string{"run"}, []string{token, "BOT_REDIS__URL=http://h:1"}, "redis.url"},
		{"an unknown follow-up policy", []string{"run"}, []string{token, "BOT_RUNS__FOLLOWUP=sometimes"}, "runs.followup"},
		{"an unknown log level", []string{"run"}, []string{token, "BOT_LOG__LEVEL=loud"}, "log.level"},
		{"a short signing key", []string{"run"}, []string{token, "BOT_AUTH__SIGNING_KEYS=short"}, "auth.signing_keys[0]"},
		{"a Telegram id that is a @username", []string{"run"}, []string{token, "BOT_ADMINS__TELEGRAM=@alice"}, "admins.telegram[0]"},
		{"a token of the wrong shape", []string{"run"}, []string{"BOT_TELEGRAM__TOKEN=abcdef"}, "telegram.token"},
		{"a pacing flag that is not a boolean", []string{"run"}, []string{token, "BOT_TELEGRAM__PACING=sometimes"}, "telegram.pacing"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runContext(context.Background(), r.args, strings.NewReader(""), &out, &errb, append([]string{"BOT_HTTP__ADDR=127.0.0.1:0"}, r.environ...))
			all := out.String() + errb.String()
			if code != exitConfig {
				t.Errorf("exit %d, want %d:\n%s", code, exitConfig, all)
			}
			if !strings.Contains(all, r.want) {
				t.Errorf("output lacks %q:\n%s", r.want, all)
			}
			if strings.Contains(all, "panic") || strings.Contains(all, "abcdef") {
				t.Errorf("output shows a panic or the token:\n%s", all)
			}
		})
	}
}

// TestBadInputCatalogueModelOutput: whatever the model sends back — arguments that are not
// JSON, a tool that does not exist, nothing at all, an error — the run ends with an answer or a
// short failure the user can read, and never shows a tool's name or a stack.
func TestBadInputCatalogueModelOutput(t *testing.T) {
	t.Parallel()
	e := newE2E(t, func(c *config.Config) { c.LLM.MaxRetries = 0 })
	// A tool call the model got wrong is answered to the model as an error it can correct (it
	// then answers); what ends the run is told to the user in a line.
	rows := []struct {
		name  string
		reply func(n int) modelserver.Reply // n counts the run's model calls from 0
		want  string                        // in the closing message
	}{
		{"tool arguments that are not JSON", toolThenEcho("delegate", `{"task": "x"`), "echo: recovered"},
		{"tool arguments of the wrong type", toolThenEcho("delegate", `{"task": 42}`), "echo: recovered"},
		{"tool arguments that are an array", toolThenEcho("ask_clarification", `[1,2]`), "echo: recovered"},
		{"a tool that does not exist", toolThenEcho("rm_rf", `{}`), "echo: recovered"},
		{"a tool with an empty name", toolThenEcho("", `{}`), "echo: recovered"},
		{"structured_output outside a subagent", toolThenEcho("structured_output", `{"answer":"x"}`), "echo: recovered"},
		{"a clarification with no fields", toolThenEcho("ask_clarification", `{"question":"Which one?","fields":[]}`), "Which one?"},
		{"an empty answer", func(int) modelserver.Reply { return modelserver.Reply{Content: ""} }, "without writing an answer"},
		{"an answer cut by the token limit", func(int) modelserver.Reply { return modelserver.Reply{Content: "half an", Finish: "length"} }, "length limit"},
		{"a refusal", func(int) modelserver.Reply { return modelserver.Reply{Content: "", Finish: "content_filter"} }, "declined"},
		{"a bad request", func(int) modelserver.Reply { return modelserver.Reply{Status: http.StatusBadRequest} }, "❌"},
		{"the key refused", func(int) modelserver.Reply { return modelserver.Reply{Status: http.StatusUnauthorized} }, "❌"},
	}
	var mu sync.Mutex
	calls := map[int64]int{}
	row := map[int64]int{}
	first := int64(800_000)
	e.model.SetFunc(func(r modelserver.Request) modelserver.Reply {
		var chat int64
		if _, err := fmt.Sscanf(r.LastUserText(), "case %d", &chat); err != nil {
			return echoModel(r) // a follow-up turn of a row's run
		}
		mu.Lock()
		n, i := calls[chat], row[chat]
		calls[chat]++
		mu.Unlock()
		return rows[i].reply(n)
	})
	for i := range rows {
		row[first+int64(i)] = i
	}
	e.start()
	for i := range rows {
		chat := first + int64(i)
		e.tg.PushPrivate(telegramfake.User{ID: chat, FirstName: "Bad"}, fmt.Sprintf("case %d", chat))
	}
	for i, r := range rows {
		chat := first + int64(i)
		waitFor(t, r.name+": a closing message", 20*time.Second, func() bool {
			posted := e.tg.Posted(chat)
			return len(posted) > 0 && !isPlaceholder(posted[len(posted)-1])
		})
		posted := e.tg.Posted(chat)
		if last := visible(posted[len(posted)-1]); !strings.Contains(last, r.want) {
			t.Errorf("%s: the closing message is %q, want it to contain %q", r.name, last, r.want)
		}
		for _, m := range posted {
			v := visible(m)
			for _, leak := range []string{"delegate", "ask_clarification", "structured_output", "goroutine", "panic", "sk-e2e-test"} {
				if strings.Contains(v, leak) {
					t.Errorf("%s: the user sees %q in %q", r.name, leak, v)
				}
			}
		}
	}
}

// toolThenEcho is a model that first calls tool with args, then answers "echo: recovered".
func toolThenEcho(tool, args string) func(n int) modelserver.Reply {
	return func(n int) modelserver.Reply {
		if n == 0 {
			return modelserver.Reply{ToolCalls: []modelserver.ToolCall{{ID: "call-1", Name: tool, Arguments: args}}}
		}
		return modelserver.Reply{Content: "echo: recovered"}
	}
}
