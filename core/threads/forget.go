package threads

import (
	"context"
	"fmt"
)

// Forgotten is what Forget dropped.
type Forgotten struct {
	// Thread reports that the conversation had a thread record, now deleted with its log.
	Thread bool
	// Clarification is the id of the pending clarification withdrawn, empty when none was.
	Clarification string
}

// Forget drops a conversation's state: its thread record (settings included) and session log
// are deleted and its pending clarification withdrawn (TakeClarification then says
// ErrClarificationCancelled). The next message of the conversation starts a new thread. Run
// and outbound records stay until their TTL: they only stop a replayed run posting twice.
func (s *Store) Forget(ctx context.Context, convKey string) (Forgotten, error) {
	if err := checkConvKey(convKey); err != nil {
		return Forgotten{}, fmt.Errorf("threads: forget: %w", err)
	}
	had, cancelled, err := s.r.forget(ctx, s.keys.conv(convKey))
	if err != nil {
		return Forgotten{}, fmt.Errorf("threads: forget %q: %w", convKey, err)
	}
	return Forgotten{Thread: had, Clarification: cancelled}, nil
}

// ForgetWhere Forgets every conversation with a thread whose key match accepts, and returns
// their keys. It scans the keyspace (every master on a cluster): an admin operation (a
// workspace uninstalling the app), not for hot paths. A conversation that gets its first
// thread after the scan passed it is not forgotten, so the caller stops its intake first. On an
// error, the keys forgotten before it are returned with it.
func (s *Store) ForgetWhere(ctx context.Context, match func(convKey string) bool) ([]string, error) {
	var keys []string
	err := s.r.scanThreads(ctx, s.keys.prefix, func(key, conv string) {
		// Only a record at its own conversation's key counts: nothing else is a thread.
		if s.keys.conv(conv).thread == key {
			keys = append(keys, conv)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("threads: forget where: scan: %w", err)
	}
	var done []string
	for _, k := range keys {
		if !match(k) {
			continue
		}
		if _, err := s.Forget(ctx, k); err != nil {
			return done, err
		}
		done = append(done, k)
	}
	return done, nil
}
