package discord

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/switchboard-bot/switchboard/channels/kit"
)

// The HTTP interactions endpoint: Discord can post interactions to a URL (Developer Portal →
// General Information → Interactions Endpoint URL) instead of sending them on the gateway. Each
// request is signed with Ed25519 (X-Signature-Ed25519 over X-Signature-Timestamp + body, the
// application's public key); the first answer is the HTTP response, within 3 s.

// webhook is the HTTP interactions endpoint (InteractionsHandler): each request checked, then
// handled as interactions handles one from the gateway, its first answer the HTTP response.
type webhook struct {
	cfg          *Config
	life         *kit.Lifecycle
	workers      *kit.Workers
	dispatcher   *dispatcher // malformed requests are counted as malformed events
	interactions *interactions
	clock        *kit.Clock
}

// maxSkew bounds the age of a request's timestamp, so a captured request cannot be replayed
// later (Discord's signature alone does not expire).
const maxSkew = 5 * time.Minute

// maxInteractionBytes bounds a request body. Discord states no limit for what it posts; an
// interaction is bounded by what it can carry — a message of 2,000 characters (4,000 from a
// Nitro user) with 10 embeds of 6,000 in all, 40 components of 4,000 characters, a modal's
// inputs of 4,000 each, the users, members, roles and channels resolved for a select of 25 —
// a few hundred KiB at the very most, JSON-escaped: 1 MiB leaves a margin of several times.
const maxInteractionBytes = 1 << 20

// InteractionsHandler serves Discord's HTTP interactions at the path the caller mounts it on.
// It needs Config.PublicKey. It answers 401 to a missing or wrong signature and to a timestamp
// more than five minutes off (logged at Debug only: the listener counts the 401s), 413 to a
// body over 1 MiB (announced by Content-Length: refused unread), 408 to a body that does not
// arrive before the connection's read deadline (set by the listener), 400 to one it cannot read
// otherwise or cannot decode, PONG to PING, 503 before Start and after Stop, and otherwise
// hands the interaction to the router like one from the gateway, answering with the router's
// first response (a notice, a modal, a deferral) or, after Config.DeferAfter, with a deferral
// of its own.
func (wh *webhook) InteractionsHandler() http.Handler {
	return http.HandlerFunc(wh.serve)
}

func (wh *webhook) verify(r *http.Request, body []byte) bool {
	if len(wh.cfg.PublicKey) != ed25519.PublicKeySize {
		return false
	}
	sig, err := hex.DecodeString(r.Header.Get("X-Signature-Ed25519"))
	if err != nil || len(sig) != ed25519.SignatureSize {
		return false
	}
	ts := r.Header.Get("X-Signature-Timestamp")
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	if d := wh.clock.Now().Sub(time.Unix(secs, 0)); d > maxSkew || d < -maxSkew {
		return false
	}
	return ed25519.Verify(wh.cfg.PublicKey, append([]byte(ts), body...), sig)
}

func (wh *webhook) serve(w http.ResponseWriter, r *http.Request) {
	ix, ok := wh.read(w, r)
	if !ok {
		return
	}
	if !wh.life.IsReceiving() {
		http.Error(w, "not receiving", http.StatusServiceUnavailable)
		return
	}
	reply := make(chan map[string]any, 1)
	st := &ixState{id: ix.ID, token: ix.Token, httpReply: reply,
		update: ix.Type == 3 || ix.Message != nil}
	// Started under the lock Stop takes before it waits, so no handler starts after Stop
	// began waiting; once started, it is handled to its end (see goHandle).
	if !wh.workers.Go(func(ctx context.Context) {
		wh.interactions.places.learnInteraction(ix)
		wh.interactions.handle(context.WithoutCancel(ctx), ix, st)
	}) {
		http.Error(w, "not receiving", http.StatusServiceUnavailable)
		return
	}
	wh.answer(w, r, st, reply)
}

// read reads and checks an interaction request: its body, its signature, a PING answered with
// PONG. ok is false when the request was answered here.
func (wh *webhook) read(w http.ResponseWriter, r *http.Request) (ix *interactionEvent, ok bool) {
	// The whole body is read before anyone is authenticated (the signature covers it): at most
	// maxInteractionBytes, none when Content-Length announces more, within the read deadline the
	// listener set.
	body, err := kit.ReadBody(w, r, maxInteractionBytes)
	if err != nil {
		wh.cfg.Logger.Debug("discord: refused an interaction request body", "remote", r.RemoteAddr, "err", err)
		kit.RefuseBody(w, err)
		return nil, false
	}
	if !wh.verify(r, body) {
		// Debug, not Warn: anyone can send these, and a line each would let them fill the log.
		// The listener counts the 401s and logs them at a bounded rate.
		wh.cfg.Logger.Debug("discord: refusing an interaction request with a bad signature or timestamp", "remote", r.RemoteAddr)
		http.Error(w, "invalid request signature", http.StatusUnauthorized)
		return nil, false
	}
	typ, err := interactionType(body)
	if err != nil {
		wh.dispatcher.malformed("interaction request", err)
		http.Error(w, "malformed interaction", http.StatusBadRequest)
		return nil, false
	}
	if typ == 1 { // PING
		writeJSON(w, map[string]any{"type": 1})
		return nil, false
	}
	ix, err = decodeInteraction(body)
	if err != nil {
		wh.dispatcher.malformed("interaction request", err)
		http.Error(w, "malformed interaction", http.StatusBadRequest)
		return nil, false
	}
	return ix, true
}

// answer writes the interaction's first answer as the response: the Handler's (a notice, a
// modal, a deferral), or after Config.DeferAfter — or when the request ends — a deferral of
// its own.
func (wh *webhook) answer(w http.ResponseWriter, r *http.Request, st *ixState, reply <-chan map[string]any) {
	t := time.NewTimer(wh.cfg.DeferAfter)
	defer t.Stop()
	select {
	case b := <-reply:
		writeJSON(w, b)
		return
	case <-t.C:
	case <-r.Context().Done():
	}
	st.mu.Lock()
	if st.httpReply == nil { // the answer was made just now
		st.mu.Unlock()
		writeJSON(w, <-reply)
		return
	}
	st.httpReply, st.acked = nil, true
	st.mu.Unlock()
	writeJSON(w, quietAck(st))
}

// interactionType reads the type of an interaction request's body, which says whether it is a
// PING. It fails on anything but a JSON object with a numeric (or no) type.
func interactionType(body []byte) (int, error) {
	var head struct {
		Type int `json:"type"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return 0, fmt.Errorf("%w: %w", errMalformed, err)
	}
	return head.Type, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
