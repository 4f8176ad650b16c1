package kit

import (
	"sync"

	"github.com/switchboard-bot/switchboard/channels"
)

// Handoff holds what an adapter's intakes hand inbound to: the Handler it was started with and
// what it learned of itself at Start (S: the bot's identity on the platform, or struct{} where
// nothing is kept). Start sets both once; every intake reads them, from any goroutine. The zero
// value holds nothing (a nil Handler) until Begin.
type Handoff[S any] struct {
	mu      sync.Mutex
	handler channels.Handler
	self    S
}

// Begin takes h as the Handler and self as who the bot is.
func (o *Handoff[S]) Begin(h channels.Handler, self S) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.handler, o.self = h, self
}

// State returns the Handler and who the bot is; nil and S's zero value before Begin.
func (o *Handoff[S]) State() (channels.Handler, S) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.handler, o.self
}
