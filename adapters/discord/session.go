package discord

import (
	"context"
	"sync"
)

// Session is a shard's gateway session as a later process needs it to resume: Discord then
// replays the events it sent after Seq, including those that arrived while no process was
// connected. BotID and BotRoles stand in for the READY and GUILD_CREATE a resume does not
// repeat.
type Session struct {
	ID        string   `json:"id"`
	ResumeURL string   `json:"resume_url"`
	Seq       int64    `json:"seq"`
	BotID     string   `json:"bot_id"`
	AppID     string   `json:"app_id,omitempty"`
	BotRoles  []string `json:"bot_roles,omitempty"`
}

// SessionStore keeps sessions across restarts. LoadSession returns the zero Session when there
// is none; SaveSession is called at Stop, with the sequence number of the last event handed
// over with every earlier one (an event the router could not take is replayed to the next
// process, which dedupes the rest by message id).
type SessionStore interface {
	LoadSession(ctx context.Context, shard int) (Session, error)
	SaveSession(ctx context.Context, shard int, s Session) error
}

// MemorySessions is a SessionStore in memory, for tests and one-process restarts of a Channel.
type MemorySessions struct {
	mu sync.Mutex
	m  map[int]Session
}

// LoadSession returns the shard's saved session, or the zero Session.
func (s *MemorySessions) LoadSession(_ context.Context, shard int) (Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[shard], nil
}

// SaveSession keeps the shard's session.
func (s *MemorySessions) SaveSession(_ context.Context, shard int, sess Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[int]Session{}
	}
	s.m[shard] = sess
	return nil
}

// maxPending bounds the events remembered as not yet handed over.
const maxPending = 100000

// hold marks a message event as received and not yet handed over.
func (g *gateway) hold(seq int64) {
	if seq <= 0 {
		return
	}
	g.pmu.Lock()
	defer g.pmu.Unlock()
	if g.pending == nil {
		g.pending = map[int64]struct{}{}
	}
	if len(g.pending) < maxPending {
		g.pending[seq] = struct{}{}
	}
}

// done marks a held event as handed over (or deliberately ignored).
func (g *gateway) done(seq int64) {
	g.pmu.Lock()
	delete(g.pending, seq)
	g.pmu.Unlock()
}

// safeSeq is the sequence number a later resume may start after: the last received, or just
// before the earliest event not handed over.
func (g *gateway) safeSeq() int64 {
	g.mu.Lock()
	s := g.seq
	g.mu.Unlock()
	g.pmu.Lock()
	defer g.pmu.Unlock()
	for p := range g.pending {
		if p-1 < s {
			s = p - 1
		}
	}
	return s
}
