package runs

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/switchboard-bot/switchboard/core/conv"
)

// MaxEnvelopeBytes bounds an encoded envelope; larger input is malformed. The router refuses
// oversized messages politely long before this.
const MaxEnvelopeBytes = 1 << 20

// Envelope is one unit of work for the workers: a message, a clarification answer or a command,
// with everything needed to run it. The router fills it, signs it and enqueues it; workers trust
// nothing in it until Signer.Verify succeeds.
type Envelope struct {
	// RunID is a ULID (NewRunID): sortable by creation time, unique per run.
	RunID    string        `json:"run_id"`
	Kind     Kind          `json:"kind"`
	Conv     conv.Key      `json:"conv"`
	Identity conv.Identity `json:"identity"`
	Text     string        `json:"text,omitempty"`
	// Attachments are file metadata only.
	Attachments []conv.Attachment `json:"attachments,omitempty"`
	// Direct: the message came in a private chat with the bot (profiles route on it).
	Direct bool `json:"direct,omitempty"`
	// ReplyTo is the platform message id the answer should reply to or thread under.
	ReplyTo string `json:"reply_to,omitempty"`
	// Command and Args are set for KindCommand.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// ClarificationID is set for KindClarificationAnswer: the form being answered.
	ClarificationID string    `json:"clarification_id,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	// Attempt is how many times a worker has started this run, 1 on the first try. The queue sets
	// it; it is not covered by the signature.
	Attempt int `json:"attempt,omitempty"`
	// Sig is the HMAC over the canonical form (Canonical); nil means unsigned.
	Sig *Signature `json:"sig,omitempty"`
}

// Signature is an envelope's HMAC-SHA256 and the id of the key that made it.
type Signature struct {
	// KeyID names the signing key without revealing it (KeyID).
	KeyID string `json:"kid"`
	// MAC is the base64 (raw URL alphabet) HMAC-SHA256 of Canonical.
	MAC string `json:"mac"`
}

// NewRunID returns a fresh ULID string; ids made by one process are strictly increasing.
func NewRunID() string { return ulid.Make().String() }

// Encode returns the envelope's wire form (JSON), the bytes the queue stores. It fails only for
// a created_at outside the years 0–9999.
func (e *Envelope) Encode() ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("runs: encode envelope %s: %w", e.RunID, err)
	}
	return b, nil
}

// DecodeEnvelope parses and validates an envelope's wire form. Any defect — not JSON, unknown
// fields, trailing data, oversize, a missing or invalid required field — is an error wrapping
// ErrMalformed. It does not verify the signature.
func DecodeEnvelope(b []byte) (*Envelope, error) {
	if len(b) > MaxEnvelopeBytes {
		return nil, fmt.Errorf("%w: %d bytes is over the %d byte limit", ErrMalformed, len(b), MaxEnvelopeBytes)
	}
	var e Envelope
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: trailing data after the envelope", ErrMalformed)
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return &e, nil
}

// Validate checks the fields every envelope must carry; its errors wrap ErrMalformed.
func (e *Envelope) Validate() error {
	bad := func(what string) error { return fmt.Errorf("%w: %s", ErrMalformed, what) }
	if _, err := ulid.ParseStrict(e.RunID); err != nil {
		return bad("run_id is not a ULID")
	}
	if !e.Kind.Valid() {
		return bad("unknown kind")
	}
	if e.Conv.Platform == "" || e.Conv.Chat == "" {
		return bad("conversation key needs a platform and a chat")
	}
	if e.Identity.ChannelUserID == "" {
		return bad("identity needs a channel_user_id")
	}
	if e.CreatedAt.IsZero() {
		return bad("created_at is missing")
	}
	if e.Attempt < 0 {
		return bad("negative attempt")
	}
	if e.Kind == KindCommand && e.Command == "" {
		return bad("command envelope without a command")
	}
	if e.Kind == KindClarificationAnswer && e.ClarificationID == "" {
		return bad("clarification answer without a clarification_id")
	}
	for _, a := range e.Attachments {
		if a.Size < 0 {
			return bad("negative attachment size")
		}
	}
	return nil
}

// Canonical is the exact byte string the signature covers: a version tag and every field except
// Attempt and Sig, each length-prefixed, so no two different envelopes share a canonical form.
func (e *Envelope) Canonical() []byte {
	// Sized once: 8 bytes of length before each string, and the few longer fields.
	w := canonWriter{buf: make([]byte, 0, 256+len(e.Text)+len(e.Identity.DisplayName)+64*(len(e.Attachments)+len(e.Args)))}
	w.str("switchboard.envelope.v1")
	w.str(e.RunID)
	w.str(string(e.Kind))
	w.str(e.Conv.Platform)
	w.str(e.Conv.Workspace)
	w.str(e.Conv.Chat)
	w.str(e.Conv.Thread)
	w.str(e.Identity.Platform)
	w.str(e.Identity.ChannelUserID)
	w.str(e.Identity.DisplayName)
	w.boolean(e.Identity.Admin)
	w.str(e.Text)
	w.uint(uint64(len(e.Attachments)))
	for _, a := range e.Attachments {
		w.str(a.Name)
		w.str(a.MIME)
		w.uint(uint64(a.Size))
		w.str(a.URL)
	}
	w.str(e.ReplyTo)
	w.str(e.Command)
	w.uint(uint64(len(e.Args)))
	for _, a := range e.Args {
		w.str(a)
	}
	w.str(e.ClarificationID)
	w.uint(uint64(e.CreatedAt.Unix()))
	w.uint(uint64(e.CreatedAt.Nanosecond()))
	// Fields added after v1 follow, each only when set, so that an envelope without them keeps
	// the canonical form it had (runs queued by an older release still verify) and one with
	// them cannot share its form with any v1 envelope (v1 forms end at the time).
	if e.Direct {
		w.str("direct")
	}
	return w.buf
}

type canonWriter struct{ buf []byte }

func (w *canonWriter) uint(v uint64) { w.buf = binary.BigEndian.AppendUint64(w.buf, v) }
func (w *canonWriter) str(s string) {
	w.uint(uint64(len(s)))
	w.buf = append(w.buf, s...)
}
func (w *canonWriter) boolean(b bool) {
	if b {
		w.buf = append(w.buf, 1)
	} else {
		w.buf = append(w.buf, 0)
	}
}
