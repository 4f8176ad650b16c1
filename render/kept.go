package render

import (
	"reflect"
	"sync"
)

// maxKept bounds the renderings a Kept holds: those never taken (a long answer's trial heads,
// a card delivered some other way) are dropped with the rest when it fills.
const maxKept = 256

// Kept holds an adapter's renderings of cards, by the run each card's footer names, for the
// next use of the same card: delivery counts a closing card's pages (channels.Pager) and then
// sends it, and rendering it — markdown to the dialect, chunking, signing buttons — is most of
// what sending costs the process (a 2 KB answer with five subagent results takes about 170 µs).
// A rendering is taken once, and only for a card equal to the one rendered field by field, so
// nothing stale is ever sent. The zero value is ready; safe for concurrent use.
type Kept[T any] struct {
	mu    sync.Mutex
	cards map[string]kept[T]
}

type kept[T any] struct {
	card Card
	v    T
}

// Keep holds v as card's rendering; a card without a run id is not held.
func (k *Kept[T]) Keep(card *Card, v T) {
	id := card.Footer.RunID
	if id == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cards == nil || len(k.cards) >= maxKept {
		k.cards = make(map[string]kept[T])
	}
	k.cards[id] = kept[T]{card: *card, v: v}
}

// Take returns the rendering held for a card equal to card, and forgets it.
func (k *Kept[T]) Take(card *Card) (T, bool) {
	var zero T
	id := card.Footer.RunID
	if id == "" {
		return zero, false
	}
	k.mu.Lock()
	held, ok := k.cards[id]
	if ok {
		delete(k.cards, id)
	}
	k.mu.Unlock()
	if !ok || !reflect.DeepEqual(held.card, *card) {
		return zero, false
	}
	return held.v, true
}
