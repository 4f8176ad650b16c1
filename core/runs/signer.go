package runs

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
)

// The ways verification fails. Verify's errors wrap exactly one of them.
var (
	// ErrUnsigned: the envelope carries no signature.
	ErrUnsigned = errors.New("runs: envelope is unsigned")
	// ErrUnknownKey: the signature names a key this process does not hold (retired or forged).
	ErrUnknownKey = errors.New("runs: envelope signed with an unknown key")
	// ErrBadSignature: the MAC does not match the envelope (tampered or forged).
	ErrBadSignature = errors.New("runs: envelope signature does not match")
	// ErrMalformed: the envelope or its signature cannot be parsed or misses required fields.
	ErrMalformed = errors.New("runs: malformed envelope")
)

// MinKeyBytes is the shortest signing key NewSigner accepts.
const MinKeyBytes = 16

// Signer signs envelopes with the newest key of a ring and verifies with any key of it, so keys
// rotate by prepending a new key, deploying, and dropping the old one once queued runs drained.
// It is safe for concurrent use and never reveals key material in errors.
type Signer struct {
	keys []signingKey // newest first
}

type signingKey struct {
	id  string
	key []byte
}

// NewSigner builds a signer from keys ordered newest first. It fails when the ring is empty, a key
// is shorter than MinKeyBytes, or two keys are equal.
func NewSigner(keys [][]byte) (*Signer, error) {
	if len(keys) == 0 {
		return nil, errors.New("runs: signer needs at least one key")
	}
	s := &Signer{}
	seen := map[string]bool{}
	for i, k := range keys {
		if len(k) < MinKeyBytes {
			return nil, fmt.Errorf("runs: signing key %d is shorter than %d bytes", i, MinKeyBytes)
		}
		id := KeyID(k)
		if seen[id] {
			return nil, fmt.Errorf("runs: signing key %d repeats an earlier key", i)
		}
		seen[id] = true
		s.keys = append(s.keys, signingKey{id: id, key: append([]byte(nil), k...)})
	}
	return s, nil
}

// KeyID is the public name of a key: a truncated hash that identifies it without revealing it.
func KeyID(key []byte) string {
	h := sha256.New()
	h.Write([]byte("switchboard.signing-key-id.v1\x00"))
	h.Write(key)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Sign sets env.Sig with the newest key over env.Canonical. Fields changed afterwards (except
// Attempt) invalidate the signature.
func (s *Signer) Sign(env *Envelope) {
	k := s.keys[0]
	env.Sig = &Signature{KeyID: k.id, MAC: base64.RawURLEncoding.EncodeToString(mac(k.key, env.Canonical()))}
}

// Verify checks env's signature against the ring. It returns nil, or an error wrapping one of
// ErrUnsigned, ErrUnknownKey, ErrBadSignature or ErrMalformed.
func (s *Signer) Verify(env *Envelope) error {
	if env.Sig == nil || (env.Sig.KeyID == "" && env.Sig.MAC == "") {
		return fmt.Errorf("runs: verify %s: %w", env.RunID, ErrUnsigned)
	}
	var key []byte
	for _, k := range s.keys {
		if k.id == env.Sig.KeyID {
			key = k.key
			break
		}
	}
	if key == nil {
		return fmt.Errorf("runs: verify %s: %w", env.RunID, ErrUnknownKey)
	}
	got, err := base64.RawURLEncoding.DecodeString(env.Sig.MAC)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("runs: verify %s: signature encoding: %w", env.RunID, ErrMalformed)
	}
	if !hmac.Equal(got, mac(key, env.Canonical())) {
		return fmt.Errorf("runs: verify %s: %w", env.RunID, ErrBadSignature)
	}
	return nil
}

// Open decodes a wire envelope and verifies it: the one call a worker makes before trusting it.
func (s *Signer) Open(b []byte) (*Envelope, error) {
	env, err := DecodeEnvelope(b)
	if err != nil {
		return nil, err
	}
	if err := s.Verify(env); err != nil {
		return env, err
	}
	return env, nil
}

// VerifyReason names a verification failure for dead letters and metrics: "unsigned",
// "unknown_key", "bad_signature", "malformed", or "" when err is none of them.
func VerifyReason(err error) string {
	switch {
	case errors.Is(err, ErrUnsigned):
		return "unsigned"
	case errors.Is(err, ErrUnknownKey):
		return "unknown_key"
	case errors.Is(err, ErrBadSignature):
		return "bad_signature"
	case errors.Is(err, ErrMalformed):
		return "malformed"
	}
	return ""
}

func mac(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}
