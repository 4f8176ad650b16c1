package slack

import (
	"context"
	"strconv"
	"testing"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
	"github.com/switchboard-bot/switchboard/internal/chantest"
	slackfake "github.com/switchboard-bot/switchboard/internal/fake/slack"
)

// BenchmarkSend measures Send of a short markdown answer through slack-go to the fake (HTTP on
// loopback included), pacing off, over 200 DMs: what a run's closing message costs the adapter.
func BenchmarkSend(b *testing.B) {
	fake := slackfake.Start()
	defer fake.Close()
	fake.SetRecording(false)
	h := startWith(b, fake, func(c *Config) { c.Pacing = false }, &recorder{})
	msg := channels.Message{Text: "echo: the answer is 42"}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			to := channels.Target{Conv: conv.Key{Platform: "slack", Workspace: slackfake.TeamID, Chat: "D" + strconv.Itoa(i%200)}}
			if _, err := h.ch.Send(context.Background(), to, msg); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkInboundSocket measures one DM from the fake's Socket Mode socket through decoding,
// the conversation's lane, the ack and conversion to the Handler, over 200 DMs.
func BenchmarkInboundSocket(b *testing.B) {
	fake := slackfake.Start()
	defer fake.Close()
	fake.SetRecording(false)
	counted := chantest.NewCounter(b.N)
	ch, _ := newChannel(b, fake, nil)
	if err := ch.Start(context.Background(), counted); err != nil {
		b.Fatal(err)
	}
	defer ch.Stop(context.Background())
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		fake.PushMessage(slackfake.Msg{Channel: "D" + strconv.Itoa(i%200), ChannelType: "im",
			User: "U" + strconv.Itoa(i%200), Text: "hello number " + strconv.Itoa(i)})
	}
	<-counted.Done()
}
