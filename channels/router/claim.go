package router

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
)

// ErrEventPending is returned by HandleInbound for an event another delivery holds pending: it is
// being handled, or its handling failed and Redis could not be told. The platform should deliver
// it again later (Telegram: the offset stays before it).
var ErrEventPending = errors.New("channels: the event is being handled by another delivery; deliver it again later")

// How an inbound event is seen once, across Redis failures. Intake claims the event pending under
// a token of this handling. The run that answers it is queued with EnqueueOnce, which marks the
// event in the step that puts the run in its mailbox: from then on the mark, not the claim, makes
// a redelivery a duplicate — also when the enqueue's reply was lost or its second step failed
// (the run is queued; the recoverer schedules it). An event handled without a run (a command, a
// refusal) completes its claim. A handling that fails gives the claim back; if Redis cannot be
// reached to do so, the token is kept (owedClaims) and the redelivery to this process takes the
// claim again with it, while one to another process is refused until the pending claim expires.

// eventClaim is the claim of the event being routed; route's enqueue uses it.
type eventClaim struct {
	key    string
	queued bool // its run was queued with its mark, or found queued already
}

type claimCtxKey struct{}

func withClaim(ctx context.Context, c *eventClaim) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, claimCtxKey{}, c)
}

func claimOf(ctx context.Context) *eventClaim {
	c, _ := ctx.Value(claimCtxKey{}).(*eventClaim)
	return c
}

// maxOwed bounds the claims a router remembers it could not give back.
const maxOwed = 4096

// owedClaims are the tokens of claims this router could not give back, by claim key, so that
// the redelivery of their event takes the claim again instead of being refused.
type owedClaims struct {
	mu     sync.Mutex
	tokens map[string]string
	order  []string
}

func newOwedClaims() *owedClaims { return &owedClaims{tokens: map[string]string{}} }

// token is the token to claim key with: the one kept for it, or a fresh one.
func (o *owedClaims) token(key string) string {
	o.mu.Lock()
	t, ok := o.tokens[key]
	o.mu.Unlock()
	if ok {
		return t
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (o *owedClaims) keep(key, token string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.tokens[key]; !ok {
		if len(o.order) >= maxOwed {
			delete(o.tokens, o.order[0])
			o.order = o.order[1:]
		}
		o.order = append(o.order, key)
	}
	o.tokens[key] = token
}

func (o *owedClaims) forget(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.tokens[key]; !ok {
		return
	}
	delete(o.tokens, key)
	for i, k := range o.order {
		if k == key {
			o.order = append(o.order[:i], o.order[i+1:]...)
			break
		}
	}
}
