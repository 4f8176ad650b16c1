package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
)

func TestDecodeEnvelopeRejectsMalformedInput(t *testing.T) {
	s := testSigner(t)
	good := signedEnv(s, testConv(1), "hello")
	goodJSON, err := good.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(goodJSON); err != nil {
		t.Fatalf("a good envelope fails: %v", err)
	}
	replace := func(old, new string) string { return strings.Replace(string(goodJSON), old, new, 1) }
	cases := map[string]string{
		"empty":               "",
		"not json":            "hello",
		"array":               "[]",
		"trailing data":       string(goodJSON) + "{}",
		"unknown field":       replace(`"kind"`, `"evil":1,"kind"`),
		"bad run id":          replace(good.RunID, "not-a-ulid"),
		"unknown kind":        replace(`"kind":"message"`, `"kind":"exec"`),
		"no platform":         replace(`"platform":"test","workspace"`, `"platform":"","workspace"`),
		"no user":             replace(`"channel_user_id":"u1"`, `"channel_user_id":""`),
		"wrong type":          replace(`"text":"hello"`, `"text":5`),
		"negative attempt":    replace(`"kind"`, `"attempt":-1,"kind"`),
		"no created_at":       replace(`"created_at"`, `"x_created_at"`),
		"oversized":           `{"text":"` + strings.Repeat("a", MaxEnvelopeBytes) + `"}`,
		"command without one": replace(`"kind":"message"`, `"kind":"command"`),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeEnvelope([]byte(in)); !errors.Is(err, ErrMalformed) {
				t.Errorf("DecodeEnvelope = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestEncodeRefusesACreationTimePastTheYear9999(t *testing.T) {
	e := signedEnv(testSigner(t), testConv(1), "hello")
	e.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if b, err := e.Encode(); err == nil {
		t.Fatalf("Encode = %s, want an error", b)
	}
}

func TestVerifyClassifiesFailures(t *testing.T) {
	s := testSigner(t)
	other := testSigner(t, []byte("some-other-key-0123456789"))
	mk := func(f func(e *Envelope)) *Envelope { e := signedEnv(s, testConv(1), "hi"); f(e); return e }
	cases := []struct {
		name string
		env  *Envelope
		want error
	}{
		{"valid", mk(func(*Envelope) {}), nil},
		{"attempt is not signed", mk(func(e *Envelope) { e.Attempt = 3 }), nil},
		{"unsigned", mk(func(e *Envelope) { e.Sig = nil }), ErrUnsigned},
		{"empty signature", mk(func(e *Envelope) { e.Sig = &Signature{} }), ErrUnsigned},
		{"unknown key", signedEnv(other, testConv(1), "hi"), ErrUnknownKey},
		{"tampered text", mk(func(e *Envelope) { e.Text = "bye" }), ErrBadSignature},
		{"tampered identity", mk(func(e *Envelope) { e.Identity.ChannelUserID = "admin" }), ErrBadSignature},
		{"tampered time", mk(func(e *Envelope) { e.CreatedAt = e.CreatedAt.Add(time.Nanosecond) }), ErrBadSignature},
		{"tampered args", mk(func(e *Envelope) { e.Args = []string{"x"} }), ErrBadSignature},
		{"mac not base64", mk(func(e *Envelope) { e.Sig.MAC = "!!" }), ErrMalformed},
		{"mac too short", mk(func(e *Envelope) { e.Sig.MAC = e.Sig.MAC[:8] }), ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := s.Verify(c.env)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("Verify = %v, want %v", err, c.want)
			}
		})
	}
}

func TestSignatureSurvivesTheWire(t *testing.T) {
	s := testSigner(t)
	e := signedEnv(s, testConv(1), "héllo <b>&</b>")
	e.CreatedAt = time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	e.Attachments = []conv.Attachment{{Name: "a.png", MIME: "image/png", Size: 10, URL: "https://x/a"}}
	e.Kind, e.Command, e.Args = KindCommand, "reset", []string{"all"}
	s.Sign(e)
	b, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(b); err != nil {
		t.Errorf("round trip breaks the signature: %v", err)
	}
}

func TestNewSignerRejectsBadRings(t *testing.T) {
	for name, keys := range map[string][][]byte{
		"empty":     nil,
		"short key": {[]byte("short")},
		"duplicate": {testKey, testKey},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewSigner(keys); err == nil {
				t.Error("accepted")
			} else if strings.Contains(err.Error(), string(testKey)) {
				t.Error("the error reveals the key")
			}
		})
	}
}

func TestRunEmitStampsSteps(t *testing.T) {
	rec := newRecorder()
	env := newEnv(testConv(1), "x")
	run := NewRun(env, rec)
	for _, k := range []EventKind{EventStarted, EventProgress, EventFinal} {
		if err := run.Emit(context.Background(), Event{Kind: k}); err != nil {
			t.Fatal(err)
		}
	}
	evs := rec.eventsOf(env.RunID)
	for i, e := range evs {
		if e.Step != i+1 || e.Conv != env.Conv || e.At.IsZero() || e.User != env.Identity.ChannelUserID || e.User == "" {
			t.Errorf("event %d = %+v", i, e)
		}
	}
	if len(evs) != 3 || !run.emittedTerminal() {
		t.Errorf("events = %d, terminal = %v", len(evs), run.emittedTerminal())
	}
	if err := NewRun(env, nil).Emit(context.Background(), Event{Kind: EventFinal}); err != nil {
		t.Errorf("nil sink: %v", err)
	}
}

// deltaSink asks for answer deltas in the conversations it lists.
type deltaSink struct {
	SinkFunc
	wants conv.Key
}

func (d deltaSink) WantsAnswerDeltas(k conv.Key) bool { return k == d.wants }

// TestRunAsksItsSinkForAnswerDeltas proves a run wants answer deltas only when its sink asks for
// them in the run's conversation.
func TestRunAsksItsSinkForAnswerDeltas(t *testing.T) {
	env := newEnv(testConv(1), "x")
	nop := SinkFunc(func(context.Context, Event) error { return nil })
	for name, c := range map[string]struct {
		sink Sink
		want bool
	}{
		"no sink":           {nil, false},
		"a sink that posts": {nop, false},
		"another conv":      {deltaSink{nop, testConv(2)}, false},
		"this conversation": {deltaSink{nop, env.Conv}, true},
	} {
		if got := NewRun(env, c.sink).WantsAnswerDeltas(); got != c.want {
			t.Errorf("%s: WantsAnswerDeltas = %v, want %v", name, got, c.want)
		}
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	s, _ := NewSigner([][]byte{testKey})
	good := signedEnv(s, testConv(1), "hello")
	b, _ := good.Encode()
	f.Add(b)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"run_id":"01J00000000000000000000000","kind":"command"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"sig":{"kid":"x","mac":"y"}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		env, err := DecodeEnvelope(in)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		// A decoded envelope re-encodes and decodes to the same canonical form, and verifying
		// it never panics.
		out, err := env.Encode()
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeEnvelope(out)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		if string(again.Canonical()) != string(env.Canonical()) {
			t.Fatal("canonical form changed across a round trip")
		}
		_ = s.Verify(env)
	})
}

// TestDirectIsSignedAndKeepsTheV1Form: an envelope that is not direct has the canonical form
// it had before the field existed (pinned), so runs queued by an older release still verify;
// a direct one is signed with the flag, and turning it on or off breaks the signature.
func TestDirectIsSignedAndKeepsTheV1Form(t *testing.T) {
	e := &Envelope{RunID: "01J0000000000000000000000A", Kind: KindMessage,
		Conv:     conv.Key{Platform: "telegram", Chat: "42"},
		Identity: conv.Identity{Platform: "telegram", ChannelUserID: "7"}, Text: "hi",
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
	sum := sha256.Sum256(e.Canonical())
	if got := hex.EncodeToString(sum[:8]); got != "c96488144d105061" {
		t.Fatalf("the v1 canonical form changed: sha256 starts %s", got)
	}
	s := testSigner(t)
	e.Direct = true
	s.Sign(e)
	b, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	opened, err := s.Open(b)
	if err != nil || !opened.Direct {
		t.Fatalf("a direct envelope does not survive the wire: %+v, %v", opened, err)
	}
	opened.Direct = false
	if err := s.Verify(opened); err == nil {
		t.Fatal("clearing direct kept the signature valid")
	}
}
