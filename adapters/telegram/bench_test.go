package telegram

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/internal/chantest"
	telegramfake "github.com/switchboard-bot/switchboard/internal/fake/telegram"
	"github.com/switchboard-bot/switchboard/render"
)

// BenchmarkInboundPolling measures one update from the fake's queue through getUpdates, decoding
// and conversion to the Handler (updates pushed up front, 100 per poll).
func BenchmarkInboundPolling(b *testing.B) {
	fake := telegramfake.Start()
	defer fake.Close()
	fake.SetRecording(false)
	for i := range b.N {
		fake.PushPrivate(telegramfake.User{ID: int64(1 + i%200), FirstName: "U"}, "hello number "+strconv.Itoa(i))
	}
	h := chantest.NewCounter(b.N)
	ch, err := New(Config{Token: fake.Token(), APIURL: fake.URL(), Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if err := ch.Start(context.Background(), h); err != nil {
		b.Fatal(err)
	}
	<-h.Done()
	b.StopTimer()
	_ = ch.Stop(context.Background())
}

// BenchmarkInboundWebhook measures one webhook delivery through the handler: secret check,
// decoding, conversion and the Handler call (no network).
func BenchmarkInboundWebhook(b *testing.B) {
	fake := telegramfake.Start()
	defer fake.Close()
	ch, err := New(Config{Token: fake.Token(), APIURL: fake.URL(), Logger: discardLogger(), Mode: ModeWebhook, WebhookURL: "https://x/tg", WebhookSecret: "secret"})
	if err != nil {
		b.Fatal(err)
	}
	h := chantest.NewCounter(0)
	if err := ch.Start(context.Background(), h); err != nil {
		b.Fatal(err)
	}
	defer ch.Stop(context.Background())
	handler := ch.WebhookHandler()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		body := `{"update_id":` + strconv.Itoa(i+1) + `,"message":{"message_id":3,"from":{"id":42,"is_bot":false,"first_name":"Ann"},"chat":{"id":-100,"type":"supergroup"},"date":1,"text":"@switchboard_test_bot hello","entities":[{"type":"mention","offset":0,"length":21}]}}`
		req := httptest.NewRequest("POST", "/tg", strings.NewReader(body))
		req.Header.Set(SecretHeader, "secret")
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// BenchmarkSend measures Send of a short markdown answer through the real library to the fake
// (HTTP on loopback included), pacing off, over 200 chats.
func BenchmarkSend(b *testing.B) {
	fake := telegramfake.Start()
	defer fake.Close()
	fake.SetRecording(false)
	ch, err := New(Config{Token: fake.Token(), APIURL: fake.URL(), Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Start(context.Background(), chantest.NewCounter(0)); err != nil {
		b.Fatal(err)
	}
	defer ch.Stop(context.Background())
	msg := channels.Message{Text: "The answer is **42**, see `code` and [a link](https://example.com)."}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			to := channels.Target{Conv: privateConv(int64(1 + i%200))}
			if _, err := ch.Send(context.Background(), to, msg); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkSendConcurrent is BenchmarkSend with 64 senders per CPU — about the load of a 64-worker
// pool, each worker sending and typing — and reports new connections per send (connection churn
// once more calls are in flight than the client keeps idle).
func BenchmarkSendConcurrent(b *testing.B) {
	fake := telegramfake.Start()
	defer fake.Close()
	fake.SetRecording(false)
	ch, err := New(Config{Token: fake.Token(), APIURL: fake.URL(), Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	tr := ch.api.http.Transport.(*http.Transport)
	var dials atomic.Int64
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	defer tr.CloseIdleConnections()
	if err := ch.Start(context.Background(), chantest.NewCounter(0)); err != nil {
		b.Fatal(err)
	}
	defer ch.Stop(context.Background())
	msg := channels.Message{Text: "The answer is **42**, see `code` and [a link](https://example.com)."}
	b.ReportAllocs()
	b.SetParallelism(64)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			to := channels.Target{Conv: privateConv(int64(1 + i%200))}
			if _, err := ch.Send(context.Background(), to, msg); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(dials.Load())/float64(b.N), "dials/op")
}

// BenchmarkPagesThenRender is what delivery asks of a closing card: its page count, then its
// pieces for the send. The second takes the first's rendering (Channel.rendered, a
// render.Kept); "afresh" renders it again, as before. The card is an answer with five subagent
// results.
func BenchmarkPagesThenRender(b *testing.B) {
	ch, err := New(Config{Token: "1:x", APIURL: "http://127.0.0.1:1", Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	subs := make([]render.SubagentResult, 5)
	for i := range subs {
		subs[i] = render.SubagentResult{Name: "researcher " + strconv.Itoa(i), StopReason: "end_turn", Summary: "Found **three** sources; the `second` is the best."}
	}
	body := strings.Repeat("The answer draws on *these* results, with a [link](https://example.com/a) & `code`.\n\n", 20)
	card := render.Card{Title: "Answer", Status: render.StatusDone, Body: body, Subagents: subs, Footer: render.Footer{RunID: "01BENCHRUN", Elapsed: 3 * time.Second}}
	for _, afresh := range []bool{false, true} {
		name := "kept"
		if afresh {
			name = "afresh"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				count := ch.Pages
				if afresh { // rendered and not kept: the send renders it again
					count = func(m channels.Message) (int, error) { ps, err := ch.pages.Pieces(m); return len(ps), err }
				}
				if _, err := count(channels.Message{Card: &card}); err != nil {
					b.Fatal(err)
				}
				if _, err := ch.pages.Pieces(channels.Message{Card: &card}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
