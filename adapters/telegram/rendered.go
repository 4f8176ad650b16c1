package telegram

import (
	"reflect"
	"sync"

	"github.com/switchboard-bot/switchboard/render"
)

// maxRendered bounds the cards renderedCards keeps: those counted by Pages and never sent
// (a long answer's trial heads, an answer delivered some other way) are dropped with the rest
// when it fills.
const maxRendered = 256

// renderedCards keeps the pieces of the cards Pages rendered, by the run their footer names,
// for the Send or Edit that follows: delivery counts a closing card's pages, then sends that
// card, and rendering it (markdown to HTML, chunking, signing buttons) is most of what sending
// costs this process — a rich card takes hundreds of microseconds. A card is taken only when it
// equals the one rendered, field by field, so nothing stale is ever sent; once taken, it is
// forgotten.
type renderedCards struct {
	mu    sync.Mutex
	cards map[string]renderedCard
}

type renderedCard struct {
	card   render.Card
	pieces []piece
}

// keep remembers card's pieces; a card without a run id is not remembered.
func (r *renderedCards) keep(card *render.Card, ps []piece) {
	id := card.Footer.RunID
	if id == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cards == nil || len(r.cards) >= maxRendered {
		r.cards = make(map[string]renderedCard)
	}
	r.cards[id] = renderedCard{card: *card, pieces: ps}
}

// take returns the pieces kept for a card equal to card, and forgets them.
func (r *renderedCards) take(card *render.Card) ([]piece, bool) {
	id := card.Footer.RunID
	if id == "" {
		return nil, false
	}
	r.mu.Lock()
	kept, ok := r.cards[id]
	if ok {
		delete(r.cards, id)
	}
	r.mu.Unlock()
	if !ok || !reflect.DeepEqual(kept.card, *card) {
		return nil, false
	}
	return kept.pieces, true
}
