// Package leasetest gives the adapters' tests a lease that can be cut off, as a process is from
// the others when it dies. (channels' own tests keep their copy: this package imports channels.)
package leasetest

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/switchboard-bot/switchboard/channels/kit"
)

// ErrSevered is what a severed lease answers.
var ErrSevered = errors.New("severed")

// Severable is a kit.Lease and Census over a shared MemoryLease that Sever cuts off: from
// then on it neither renews nor releases nor attends, so the others take its leases over once
// they lapse, as after a kill -9.
type Severable struct {
	M   *kit.MemoryLease
	cut atomic.Bool
}

// Sever cuts the lease off for good.
func (s *Severable) Sever() { s.cut.Store(true) }

// TryAcquire is M's, until severed.
func (s *Severable) TryAcquire(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if s.cut.Load() {
		return false, ErrSevered
	}
	return s.M.TryAcquire(ctx, name, owner, ttl)
}

// Renew is M's, until severed.
func (s *Severable) Renew(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if s.cut.Load() {
		return false, ErrSevered
	}
	return s.M.Renew(ctx, name, owner, ttl)
}

// Release is M's, until severed.
func (s *Severable) Release(ctx context.Context, name, owner string) error {
	if s.cut.Load() {
		return ErrSevered
	}
	return s.M.Release(ctx, name, owner)
}

// Attend is M's, until severed.
func (s *Severable) Attend(ctx context.Context, group, owner string, ttl time.Duration) (int, error) {
	if s.cut.Load() {
		return 0, ErrSevered
	}
	return s.M.Attend(ctx, group, owner, ttl)
}

// Leave is M's, until severed.
func (s *Severable) Leave(ctx context.Context, group, owner string) error {
	if s.cut.Load() {
		return ErrSevered
	}
	return s.M.Leave(ctx, group, owner)
}
