package discord

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/internal/chantest"
	discordfake "github.com/switchboard-bot/switchboard/internal/fake/discord"
)

func benchChannel(b *testing.B, fk *discordfake.Server, h channels.Handler) *Channel {
	b.Helper()
	ch, err := New(Config{Token: fk.Token(), APIURL: fk.URL(), ReplyInThread: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Start(context.Background(), h); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ch.Stop(context.Background()) })
	return ch
}

// BenchmarkInboundGateway measures one MESSAGE_CREATE from the fake gateway through decoding,
// per-channel ordering and conversion to the Handler, over 64 DM channels.
func BenchmarkInboundGateway(b *testing.B) {
	fk := discordfake.Start()
	defer fk.Close()
	h := chantest.NewCounter(b.N)
	benchChannel(b, fk, h)
	dms := make([]string, 64)
	for i := range dms {
		dms[i] = fk.DM(strconv.Itoa(1000 + i))
	}
	b.ResetTimer()
	for i := range b.N {
		fk.Post(discordfake.UserMessage{Channel: dms[i%len(dms)], Author: discordfake.User{ID: strconv.Itoa(1000 + i%len(dms))},
			Content: "hello number " + strconv.Itoa(i)})
	}
	<-h.Done()
}

// BenchmarkSendText measures one short text message posted through Send (rendering, the
// bucket limiter, the REST call to the fake), 8 senders over 64 DM channels.
func BenchmarkSendText(b *testing.B) {
	fk := discordfake.Start()
	defer fk.Close()
	ch := benchChannel(b, fk, chantest.NewCounter(0))
	keys := make([]conv.Key, 64)
	for i := range keys {
		keys[i] = conv.Key{Platform: "discord", Chat: fk.DM(strconv.Itoa(1000 + i))}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if _, err := ch.Send(context.Background(), channels.Target{Conv: keys[i%64]}, channels.Message{Text: "answer " + strconv.FormatInt(i, 10)}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
