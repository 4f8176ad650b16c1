package threads

import (
	"context"
	"fmt"
)

// Conversations are the conversations' threads: which thread each conversation is on and its
// settings, started over (Reset) or dropped (Forget). Their Redis scripts are in
// redis_conversations.go.
type Conversations struct{ *shared }

// Ensure returns the conversation's thread, creating it if there is none. created reports
// whether this call created it. Concurrent first calls for one conversation (from any number of
// goroutines or processes) all return the same thread, and exactly one of them sees created.
func (c *Conversations) Ensure(ctx context.Context, convKey string) (th Thread, created bool, err error) {
	if err := checkConvKey(convKey); err != nil {
		return Thread{}, false, fmt.Errorf("threads: ensure: %w", err)
	}
	ck := c.keys.conv(convKey)
	now := c.opts.Now()
	created, fields, err := c.r.ensureThread(ctx, ck.thread, c.ids.next(now), convKey, now, c.ids.next(now))
	if err != nil {
		return Thread{}, false, fmt.Errorf("threads: ensure %q: %w", convKey, err)
	}
	th, err = decodeThread(ck.thread, convKey, fields)
	if err != nil {
		return Thread{}, false, fmt.Errorf("threads: ensure %q: %w", convKey, err)
	}
	return th, created, nil
}

// Get returns the conversation's thread, or ErrThreadNotFound.
func (c *Conversations) Get(ctx context.Context, convKey string) (Thread, error) {
	if err := checkConvKey(convKey); err != nil {
		return Thread{}, fmt.Errorf("threads: get: %w", err)
	}
	ck := c.keys.conv(convKey)
	fields, err := c.r.hgetall(ctx, ck.thread)
	if err != nil {
		return Thread{}, fmt.Errorf("threads: get %q: %w", convKey, err)
	}
	if len(fields) == 0 {
		return Thread{}, fmt.Errorf("threads: get %q: %w", convKey, ErrThreadNotFound)
	}
	th, err := decodeThread(ck.thread, convKey, fields)
	if err != nil {
		return Thread{}, fmt.Errorf("threads: get %q: %w", convKey, err)
	}
	return th, nil
}

// Reset starts the conversation over (the `new` command), in one atomic step: a new thread id
// and session id, the old session log deleted, and a pending clarification cancelled (taking it
// then returns ErrClarificationCancelled). Settings carry over to the new thread: they are the
// conversation's preferences, not part of what was said. A conversation without a thread gets
// one. Turns that runs of the old thread append later fail with ErrStaleThread.
func (c *Conversations) Reset(ctx context.Context, convKey string) (Thread, error) {
	if err := checkConvKey(convKey); err != nil {
		return Thread{}, fmt.Errorf("threads: reset: %w", err)
	}
	ck := c.keys.conv(convKey)
	now := c.opts.Now()
	_, _, fields, err := c.r.resetThread(ctx, ck, c.ids.next(now), convKey, now, c.ids.next(now))
	if err != nil {
		return Thread{}, fmt.Errorf("threads: reset %q: %w", convKey, err)
	}
	th, err := decodeThread(ck.thread, convKey, fields)
	if err != nil {
		return Thread{}, fmt.Errorf("threads: reset %q: %w", convKey, err)
	}
	return th, nil
}

// SetSettings replaces the settings of the conversation's thread. It returns ErrThreadNotFound
// when the conversation has no thread (call Ensure first).
func (c *Conversations) SetSettings(ctx context.Context, convKey string, settings Settings) error {
	if err := checkConvKey(convKey); err != nil {
		return fmt.Errorf("threads: set settings: %w", err)
	}
	b, err := encodeSettings(settings)
	if err != nil {
		return fmt.Errorf("threads: set settings %q: %w", convKey, err)
	}
	ok, err := c.r.setSettings(ctx, c.keys.conv(convKey).thread, b)
	if err != nil {
		return fmt.Errorf("threads: set settings %q: %w", convKey, err)
	}
	if !ok {
		return fmt.Errorf("threads: set settings %q: %w", convKey, ErrThreadNotFound)
	}
	return nil
}

// GetSettings returns the settings of the conversation's thread, or ErrThreadNotFound.
func (c *Conversations) GetSettings(ctx context.Context, convKey string) (Settings, error) {
	th, err := c.Get(ctx, convKey)
	if err != nil {
		return Settings{}, err
	}
	return th.Settings, nil
}

// Forgotten is what Forget dropped.
type Forgotten struct {
	// Thread reports that the conversation had a thread record, now deleted with its log.
	Thread bool
	// Clarification is the id of the pending clarification withdrawn, empty when none was.
	Clarification string
}

// Forget drops a conversation's state: its thread record (settings included) and session log
// are deleted and its pending clarification withdrawn (Clarifications.Take then says
// ErrClarificationCancelled). The next message of the conversation starts a new thread. Run
// and outbound records stay until their TTL: they only stop a replayed run posting twice.
func (c *Conversations) Forget(ctx context.Context, convKey string) (Forgotten, error) {
	if err := checkConvKey(convKey); err != nil {
		return Forgotten{}, fmt.Errorf("threads: forget: %w", err)
	}
	had, cancelled, err := c.r.forget(ctx, c.keys.conv(convKey))
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
func (c *Conversations) ForgetWhere(ctx context.Context, match func(convKey string) bool) ([]string, error) {
	var keys []string
	err := c.r.scanThreads(ctx, c.keys.prefix, func(key, conv string) {
		// Only a record at its own conversation's key counts: nothing else is a thread.
		if c.keys.conv(conv).thread == key {
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
		if _, err := c.Forget(ctx, k); err != nil {
			return done, err
		}
		done = append(done, k)
	}
	return done, nil
}
