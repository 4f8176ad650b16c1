package kit

import (
	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/render"
)

// Pages renders an adapter's outbound messages into the platform's pieces (P: one platform
// message each) and keeps what Count rendered of a card for the Send or Edit of it that
// follows: delivery counts a closing card's pages (channels.Pager) and then sends it, and
// rendering is most of what sending costs the process (render.Kept says how it is kept: taken
// once, and only for an equal card). Set Render before use; safe for concurrent use.
type Pages[P any] struct {
	// Render renders m into its pieces; an error refuses m (a card the platform cannot show
	// wraps channels.ErrCardRefused).
	Render func(m channels.Message) ([]P, error)

	kept render.Kept[[]P]
}

// Count is the adapter's channels.Pager: how many platform messages Send would post for m. A
// card's rendering is kept for its Send or Edit.
func (p *Pages[P]) Count(m channels.Message) (int, error) {
	ps, err := p.Render(m)
	if err == nil && m.Card != nil {
		p.kept.Keep(m.Card, ps)
	}
	return len(ps), err
}

// Pieces renders m, or takes the rendering Count kept of an equal card.
func (p *Pages[P]) Pieces(m channels.Message) ([]P, error) {
	if m.Card != nil {
		if ps, ok := p.kept.Take(m.Card); ok {
			return ps, nil
		}
	}
	return p.Render(m)
}
