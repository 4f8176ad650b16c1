package redistest

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Faults is a client hook (redis.Hook) that makes the client fail as an unreachable Redis does:
// for the next n calls, or from a chosen command on, or by losing one command's reply.
type Faults struct {
	mu   sync.Mutex
	down bool
	// budget, when positive, is how many calls fail before Redis is back (DownFor).
	budget int
	// after, when set, is a command name: the first call holding it runs, and then Redis is
	// down (DownAfter), or that call's reply is lost (LoseReplyOf).
	after    string
	loseOnly bool
	failed   int // calls failed so far
}

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}

// DownAfter lets the first call holding the command name run, then fails every call after it.
func (f *Faults) DownAfter(name string) { f.set(name, false) }

// downFor makes the next n calls fail, then heals.
func (f *Faults) DownFor(n int) {
	f.mu.Lock()
	f.budget = n
	f.mu.Unlock()
}

// Failures is how many calls failed so far.
func (f *Faults) Failures() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// LoseReplyOf runs the first call holding the command name and then fails it, as a reply lost
// on the way back does.
func (f *Faults) LoseReplyOf(name string) { f.set(name, true) }

func (f *Faults) set(name string, loseOnly bool) {
	f.mu.Lock()
	f.after, f.loseOnly = name, loseOnly
	f.mu.Unlock()
}

// Heal brings Redis back.
func (f *Faults) Heal() {
	f.mu.Lock()
	f.down, f.after = false, ""
	f.mu.Unlock()
}

// before says whether cmds must fail unrun; after, whether they must fail once run.
func (f *Faults) before(cmds []redis.Cmder) (fail bool, failAfter bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		f.failed++
		return true, false
	}
	if f.budget > 0 {
		f.budget--
		f.failed++
		return true, false
	}
	if f.after == "" {
		return false, false
	}
	for _, c := range cmds {
		if strings.EqualFold(c.Name(), f.after) {
			f.after = ""
			if f.loseOnly {
				return false, true
			}
			f.down = true // from the next call on
			return false, false
		}
	}
	return false, false
}

func fail(cmds []redis.Cmder) error {
	for _, c := range cmds {
		c.SetErr(errRefused)
	}
	return errRefused
}

// DialHook implements redis.Hook.
func (f *Faults) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (f *Faults) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		pre, post := f.before([]redis.Cmder{cmd})
		if pre {
			return fail([]redis.Cmder{cmd})
		}
		err := next(ctx, cmd)
		if post {
			return fail([]redis.Cmder{cmd})
		}
		return err
	}
}

// ProcessPipelineHook implements redis.Hook.
func (f *Faults) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		pre, post := f.before(cmds)
		if pre {
			return fail(cmds)
		}
		err := next(ctx, cmds)
		if post {
			return fail(cmds)
		}
		return err
	}
}
