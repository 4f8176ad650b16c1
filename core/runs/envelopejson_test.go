package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/core/conv"
)

// slowDecode is DecodeEnvelope's encoding/json path, without validation.
func slowDecode(b []byte) (*Envelope, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var e Envelope
	if err := dec.Decode(&e); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data")
	}
	return &e, nil
}

func fullEnvelope() *Envelope {
	return &Envelope{
		RunID: NewRunID(), Kind: KindCommand,
		Conv:     conv.Key{Platform: "slack", Workspace: "T1", Chat: "C1", Thread: "1700000000.000100"},
		Identity: conv.Identity{Platform: "slack", ChannelUserID: "T1:U1", DisplayName: "Ada <&> \u2028", Admin: true},
		Text:     "run \"this\"\n\t\\ now",
		Attachments: []conv.Attachment{
			{Name: "a.png", MIME: "image/png", Size: 1234, URL: "https://files.example/a.png?x=1&y=2"},
			{Name: "empty"},
		},
		ReplyTo: "42", Command: "deadletters", Args: []string{"replay", "", "ünï"},
		ClarificationID: "clar-1", CreatedAt: time.Date(2026, 12, 1, 23, 59, 59, 123456789, time.FixedZone("x", 5*3600)),
		Attempt: 3, Sig: &Signature{KeyID: "k1", MAC: "bWFj"},
	}
}

func TestEncodeIsJSONMarshal(t *testing.T) {
	minimal := &Envelope{RunID: NewRunID(), Kind: KindMessage, Conv: conv.Key{Platform: "telegram", Chat: "1"},
		Identity: conv.Identity{Platform: "telegram", ChannelUserID: "1"}, CreatedAt: time.Unix(0, 0).UTC()}
	withEmpties := fullEnvelope()
	withEmpties.Attachments, withEmpties.Args, withEmpties.Sig = []conv.Attachment{}, []string{}, &Signature{}
	for _, e := range []*Envelope{minimal, fullEnvelope(), withEmpties, {}} {
		got, gotErr := e.Encode()
		want, wantErr := json.Marshal(e)
		if (gotErr == nil) != (wantErr == nil) || gotErr == nil && string(got) != string(want) {
			t.Errorf("Encode = %s (%v)\njson.Marshal = %s (%v)", got, gotErr, want, wantErr)
		}
	}
	bad := fullEnvelope()
	bad.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := bad.Encode(); err == nil {
		t.Error("an envelope from the year 10000 encoded; json.Marshal refuses it")
	}
}

func TestDecodeEnvelopeFastReadsWhatEncodingJSONReads(t *testing.T) {
	full, _ := fullEnvelope().Encode()
	for _, body := range []string{
		string(full),
		` {"run_id":"01J00000000000000000000000","kind":"message","conv":{"platform":"t","chat":"1"},"identity":{"platform":"t","channel_user_id":"1","admin":false},"created_at":"2026-01-02T03:04:05Z","attachments":[],"args":[],"sig":{}} `,
		`{"run_id":"\u0030","kind":"message","conv":{},"identity":{},"created_at":"2026-01-02T03:04:05.5+01:00","attempt":-1}`,
		`{"run_id":null,"conv":null,"identity":{"admin":null},"text":null,"attachments":null,"args":null,"created_at":null,"attempt":null,"sig":null}`,
	} {
		var got Envelope
		if !decodeEnvelopeFast([]byte(body), &got) {
			t.Errorf("decodeEnvelopeFast gave up on %s", body)
			continue
		}
		want, err := slowDecode([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if !reflect.DeepEqual(&got, want) {
			t.Errorf("%s:\ndecodeEnvelopeFast = %+v\nencoding/json = %+v", body, got, *want)
		}
	}
}

// TestDecodeEnvelopeFastGivesUp lists what the fast path leaves to encoding/json, which then
// refuses it (DecodeEnvelope's tests) or reads it.
func TestDecodeEnvelopeFastGivesUp(t *testing.T) {
	for _, tt := range []struct{ name, body string }{
		{"not an object", `[]`},
		{"trailing data", `{} {}`},
		{"unknown key", `{"run_id":"x","extra":1}`},
		{"unknown conv key", `{"conv":{"platform":"t","guild":"g"}}`},
		{"key in another case", `{"RUN_ID":"x"}`},
		{"key twice", `{"text":"a","text":"b"}`},
		{"escaped created_at", `{"created_at":"\u0032026-01-02T03:04:05Z"}`},
		{"created_at not a string", `{"created_at":5}`},
		{"attempt with a fraction", `{"attempt":1.0}`},
		{"admin as a string", `{"identity":{"admin":"yes"}}`},
		{"truncated", `{"run_id":"x"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var e Envelope
			if decodeEnvelopeFast([]byte(tt.body), &e) {
				t.Fatalf("decodeEnvelopeFast read %+v; it should leave this to encoding/json", e)
			}
		})
	}
}

// FuzzEnvelopeCodec checks the hand-written codec against encoding/json: what the fast decoder
// reads, encoding/json reads the same; and an envelope built from the input encodes to the
// bytes json.Marshal writes.
func FuzzEnvelopeCodec(f *testing.F) {
	full, _ := fullEnvelope().Encode()
	f.Add(full, "text <&>", "T1:U1", int64(1234), 3)
	f.Add([]byte(`{"run_id":"x","conv":{},"identity":{},"created_at":"2026-01-02T03:04:05Z","args":["a"]}`), "\xff", "", int64(0), 0)
	f.Fuzz(func(t *testing.T, in []byte, text, user string, size int64, attempt int) {
		var e Envelope
		if decodeEnvelopeFast(in, &e) {
			want, err := slowDecode(in)
			if err != nil {
				t.Fatalf("decodeEnvelopeFast read %+v from input encoding/json refuses: %v", e, err)
			}
			if !reflect.DeepEqual(&e, want) {
				t.Fatalf("decodeEnvelopeFast = %+v\nencoding/json = %+v", e, *want)
			}
		}
		b := fullEnvelope()
		b.Text, b.Identity.ChannelUserID, b.Args[1], b.Attachments[1].Size, b.Attempt = text, user, text, size, attempt
		b.CreatedAt = time.Unix(size, int64(attempt)).UTC()
		got, gotErr := b.Encode()
		want, wantErr := json.Marshal(b)
		if (gotErr == nil) != (wantErr == nil) || gotErr == nil && string(got) != string(want) {
			t.Fatalf("Encode = %s (%v)\njson.Marshal = %s (%v)", got, gotErr, want, wantErr)
		}
		if gotErr == nil {
			var back Envelope
			if !decodeEnvelopeFast(got, &back) {
				t.Fatalf("decodeEnvelopeFast gave up on Encode's own %s", got)
			}
		}
	})
}
