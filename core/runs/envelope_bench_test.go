package runs

import (
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
)

// BenchmarkOpen measures what a worker does with every claimed run before trusting it:
// decode the wire envelope strictly, then verify its HMAC.
func BenchmarkOpen(b *testing.B) {
	s := testSigner(b)
	env := &Envelope{
		RunID: NewRunID(), Kind: KindMessage,
		Conv:     conv.Key{Platform: "telegram", Chat: "100012"},
		Identity: conv.Identity{Platform: "telegram", ChannelUserID: "100012", DisplayName: "Load"},
		Text:     "m3 c12", ReplyTo: "4", CreatedAt: time.Now().UTC(), Attempt: 1,
	}
	s.Sign(env)
	wire, err := env.Encode()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Open(wire); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEnvelope() *Envelope {
	return &Envelope{
		RunID: NewRunID(), Kind: KindMessage,
		Conv:     conv.Key{Platform: "telegram", Chat: "100012"},
		Identity: conv.Identity{Platform: "telegram", ChannelUserID: "100012", DisplayName: "Load"},
		Text:     "could you look into the thing we talked about earlier?", ReplyTo: "4", CreatedAt: time.Now().UTC(), Attempt: 1,
		Sig: &Signature{KeyID: "k1", MAC: "bWFjbWFjbWFjbWFjbWFjbWFjbWFjbWFjbWFjbWFjbWE"},
	}
}

// BenchmarkEncodeEnvelope encodes a message's envelope, as the router does once per message.
//
//	go test -run '^$' -bench 'Envelope|Open' -benchmem ./core/runs/
func BenchmarkEncodeEnvelope(b *testing.B) {
	env := benchEnvelope()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := env.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeEnvelope decodes and validates a message's envelope, as a worker does once per
// run.
func BenchmarkDecodeEnvelope(b *testing.B) {
	wire, err := benchEnvelope().Encode()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeEnvelope(wire); err != nil {
			b.Fatal(err)
		}
	}
}
