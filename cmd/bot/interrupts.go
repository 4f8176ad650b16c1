package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
)

// interruptsKey is the context key of the Ctrl-C source catchInterrupts installs.
type interruptsKey struct{}

// interruptSource hands Ctrl-C to the command that claims it; until one does, Ctrl-C cancels the
// command's context.
type interruptSource struct {
	mu      sync.Mutex
	claimed chan os.Signal
}

// claim returns the channel every later Ctrl-C arrives on instead of cancelling the context.
func (s *interruptSource) claim() <-chan os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claimed == nil {
		s.claimed = make(chan os.Signal, 2)
	}
	return s.claimed
}

func (s *interruptSource) receiver() chan os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimed
}

// catchInterrupts returns parent with Ctrl-C (SIGINT) caught: it cancels the returned context,
// unless the command took the interrupts for itself with chatInterrupts. stop releases the
// signal and ends the goroutine that watches it.
func catchInterrupts(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	src := &interruptSource{}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case s := <-sig:
				if c := src.receiver(); c != nil {
					select {
					case c <- s:
					default: // the command has presses it has not read yet; this one adds nothing
					}
				} else {
					cancel()
				}
			case <-quit:
				return
			}
		}
	}()
	return context.WithValue(ctx, interruptsKey{}, src), func() {
		signal.Stop(sig)
		close(quit)
		<-done
		cancel()
	}
}

// chatInterrupts takes the Ctrl-C presses of ctx's command (see catchInterrupts) for `bot chat`,
// which decides itself what one means; nil — never an interrupt — when none are caught (tests
// that call runContext).
func chatInterrupts(ctx context.Context) <-chan os.Signal {
	if src, ok := ctx.Value(interruptsKey{}).(*interruptSource); ok {
		return src.claim()
	}
	return nil
}
