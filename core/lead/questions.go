package lead

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/switchboard-bot/switchboard/core/runs"
	"github.com/switchboard-bot/switchboard/core/threads"
)

// questions takes the clarifications and approvals that runs wait on out of the thread store:
// for the run that answers or decides one, and for the run that resumes an approval whose time
// ran out.
type questions struct {
	store *threads.Store
	log   *slog.Logger
}

// take claims the clarification an answer run answers. A reason is returned for answers
// that cannot be taken (expired, taken, someone else's); an error for store failures.
// An approval whose time is up is taken all the same, as expired: the call is then denied and
// the model told so (expired is true).
func (q questions) take(ctx context.Context, env *runs.Envelope) (p *pendingTurn, expired bool, reason string, err error) {
	if env.Identity.ChannelUserID == runs.SystemUser && env.Text == runs.DecisionExpired {
		return q.takeExpiredRun(ctx, env)
	}
	c, err := q.store.Clarifications().Take(ctx, env.ClarificationID, env.Identity.ChannelUserID)
	switch {
	case errors.Is(err, threads.ErrClarificationAnswered) && env.Attempt > 1 && (c.AnsweredBy == env.Identity.ChannelUserID || c.AnsweredBy == ""):
		// Our own earlier attempt took it; carry on.
		expired = c.AnsweredBy == ""
	case errors.Is(err, threads.ErrClarificationExpired) && isApproval(c):
		if p, err := q.takeExpired(ctx, env.ClarificationID); err == nil {
			return p, true, "", nil
		} else if errors.Is(err, threads.ErrClarificationAnswered) {
			return nil, false, reasonAnswered, nil
		} else if !errors.Is(err, threads.ErrClarificationCancelled) {
			return nil, false, "", fmt.Errorf("lead: taking the expired approval: %w", err)
		}
		return nil, false, reasonExpired, nil
	case errors.Is(err, threads.ErrClarificationExpired), errors.Is(err, threads.ErrClarificationCancelled), errors.Is(err, threads.ErrClarificationNotFound):
		return nil, false, reasonExpired, nil
	case errors.Is(err, threads.ErrClarificationAnswered):
		return nil, false, reasonAnswered, nil
	case errors.Is(err, threads.ErrNotYourClarification):
		return nil, false, reasonNotYours, nil
	case err != nil:
		return nil, false, "", fmt.Errorf("lead: taking the answer: %w", err)
	}
	p = &pendingTurn{}
	if err := json.Unmarshal(c.Form, p); err != nil {
		return nil, false, "", runs.Permanent(fmt.Errorf("lead: clarification %s is unreadable: %w", c.ID, err))
	}
	return p, expired, "", nil
}

// isApproval reports whether a stored clarification is an approval.
func isApproval(c threads.Clarification) bool {
	var p struct {
		Call *pendingCall `json:"call"`
	}
	return json.Unmarshal(c.Form, &p) == nil && p.Call != nil
}

// takeExpired claims an approval whose time is up, for a run that resumes it as denied.
func (q questions) takeExpired(ctx context.Context, id string) (*pendingTurn, error) {
	c, err := q.store.Clarifications().TakeExpired(ctx, id)
	if err != nil {
		return nil, err
	}
	var p pendingTurn
	if err := json.Unmarshal(c.Form, &p); err != nil || p.Call == nil {
		return nil, runs.Permanent(fmt.Errorf("lead: approval %s is unreadable", c.ID))
	}
	return &p, nil
}

// takeExpiredRun takes the approval of a run Switchboard queued when its time ran out. One the
// store's clock says still has time is tried again later (an error); one decided or withdrawn
// meanwhile returns no turn, and the run ends without a word.
func (q questions) takeExpiredRun(ctx context.Context, env *runs.Envelope) (*pendingTurn, bool, string, error) {
	p, err := q.takeExpired(ctx, env.ClarificationID)
	switch {
	case err == nil:
		return p, true, "", nil
	case errors.Is(err, threads.ErrClarificationOpen):
		return nil, false, "", fmt.Errorf("lead: approval %s has not expired yet by the store's clock: %w", env.ClarificationID, err)
	case errors.Is(err, threads.ErrClarificationAnswered), errors.Is(err, threads.ErrClarificationCancelled), errors.Is(err, threads.ErrClarificationNotFound):
		return nil, false, "", nil // decided or withdrawn meanwhile: nothing to resume, nothing to say
	}
	return nil, false, "", err
}

// expire resumes, as denied, the runs whose approval's time ran out, until ctx ends (see
// Team.ExpireApprovals).
func (q questions) expire(ctx context.Context, every time.Duration, enqueue ExpiryEnqueuer) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		due, err := q.store.Clarifications().DueExpiries(ctx, time.Now(), 100)
		if err != nil {
			if ctx.Err() == nil {
				q.log.Warn("lead: reading the approvals due to expire failed", "err", err)
			}
			continue
		}
		for _, e := range due {
			if err := enqueue(ctx, e.ConvKey, e.ID); err != nil {
				q.log.Warn("lead: queueing an expired approval failed; trying again later", "approval", e.ID, "err", err)
				if err := q.store.Clarifications().ScheduleExpiry(context.WithoutCancel(ctx), e.ID, e.ConvKey, time.Now().Add(every)); err != nil {
					q.log.Error("lead: an expired approval could not be scheduled again; it expires when someone next clicks", "approval", e.ID, "err", err)
				}
			}
		}
	}
}
