package threads

import (
	"context"
	"fmt"
	"strings"
)

// Records are the idempotency records of runs, what delivery keeps so a replayed run never
// posts twice: the outbound records of a run's steps (the platform message each posted), and
// the outcome a run ended with, for callers without a conversation (History's run records are
// those of a conversation's runs). They are kept for OutcomeTTL.
type Records struct{ *shared }

func checkRunID(runID string) error {
	if runID == "" || strings.Contains(runID, ":") || len(runID) > 128 {
		return invalid("run id must be 1 to 128 bytes without ':'")
	}
	return nil
}

// RecordOutbound records that run runID did step (e.g. "answer", "progress/2") with value (e.g.
// the platform message id it posted), the first time only: SET NX semantics. firstTime is true
// when this call stored value; otherwise nothing changes and existing is the value stored
// earlier, so a replayed run edits that message or skips the step instead of posting twice.
// The record is kept for OutcomeTTL (a day by default) from its first write.
func (rc *Records) RecordOutbound(ctx context.Context, runID, step string, value []byte) (firstTime bool, existing []byte, err error) {
	if err := checkRunID(runID); err != nil {
		return false, nil, fmt.Errorf("threads: record outbound: %w", err)
	}
	if step == "" || len(step) > 256 {
		return false, nil, fmt.Errorf("threads: record outbound of run %s: %w", runID, invalid("step must be 1 to 256 bytes"))
	}
	first, existing, err := rc.r.recordOnce(ctx, rc.keys.outbound(runID, step), value, rc.opts.OutcomeTTL)
	if err != nil {
		return false, nil, fmt.Errorf("threads: record outbound of run %s step %q: %w", runID, step, err)
	}
	return first, existing, nil
}

// RecordOutcome records how run runID ended (e.g. "answered", "failed"), the first time only.
// first is false when an outcome was already recorded; the earlier outcome is kept (read it with
// Outcome). The record is kept for OutcomeTTL from its first write.
func (rc *Records) RecordOutcome(ctx context.Context, runID, outcome string) (first bool, err error) {
	if err := checkRunID(runID); err != nil {
		return false, fmt.Errorf("threads: record outcome: %w", err)
	}
	if outcome == "" {
		return false, fmt.Errorf("threads: record outcome of run %s: %w", runID, invalid("empty outcome"))
	}
	first, _, err = rc.r.recordOnce(ctx, rc.keys.outcome(runID), []byte(outcome), rc.opts.OutcomeTTL)
	if err != nil {
		return false, fmt.Errorf("threads: record outcome of run %s: %w", runID, err)
	}
	return first, nil
}

// Outcome returns the outcome recorded for run runID; found is false when none is (never
// recorded, or older than OutcomeTTL).
func (rc *Records) Outcome(ctx context.Context, runID string) (outcome string, found bool, err error) {
	if err := checkRunID(runID); err != nil {
		return "", false, fmt.Errorf("threads: outcome: %w", err)
	}
	b, found, err := rc.r.get(ctx, rc.keys.outcome(runID))
	if err != nil {
		return "", false, fmt.Errorf("threads: outcome of run %s: %w", runID, err)
	}
	return string(b), found, nil
}

// RunRecords are the outbound records and marks Lookup found.
type RunRecords struct {
	// Outbound maps a step to what RecordOutbound stored for it; steps with no record are absent.
	Outbound map[string][]byte
	// Marks maps a key to what Mark stored under it; keys with no mark are absent.
	Marks map[string][]byte
}

// Lookup reads the outbound records of run runID for steps (as Outbound) and the marks under
// markKeys (as Marked), in one pipelined round trip, without writing.
func (rc *Records) Lookup(ctx context.Context, runID string, steps, markKeys []string) (RunRecords, error) {
	if err := checkRunID(runID); err != nil {
		return RunRecords{}, fmt.Errorf("threads: lookup: %w", err)
	}
	keys := make([]string, 0, len(steps)+len(markKeys))
	for _, st := range steps {
		if st == "" || len(st) > 256 {
			return RunRecords{}, fmt.Errorf("threads: lookup of run %s: %w", runID, invalid("step must be 1 to 256 bytes"))
		}
		keys = append(keys, rc.keys.outbound(runID, st))
	}
	for _, k := range markKeys {
		if err := checkClaimKey(k); err != nil {
			return RunRecords{}, fmt.Errorf("threads: lookup of run %s: %w", runID, err)
		}
		keys = append(keys, rc.keys.mark(k))
	}
	vals, found, err := rc.r.getMany(ctx, keys)
	if err != nil {
		return RunRecords{}, fmt.Errorf("threads: lookup of run %s: %w", runID, err)
	}
	rec := RunRecords{Outbound: map[string][]byte{}, Marks: map[string][]byte{}}
	for i, st := range steps {
		if found[i] {
			rec.Outbound[st] = vals[i]
		}
	}
	for i, k := range markKeys {
		if found[len(steps)+i] {
			rec.Marks[k] = vals[len(steps)+i]
		}
	}
	return rec, nil
}

// Outbound returns what RecordOutbound stored for run runID and step, without writing; found is
// false when nothing is recorded.
func (rc *Records) Outbound(ctx context.Context, runID, step string) (value []byte, found bool, err error) {
	if err := checkRunID(runID); err != nil {
		return nil, false, fmt.Errorf("threads: outbound: %w", err)
	}
	if step == "" || len(step) > 256 {
		return nil, false, fmt.Errorf("threads: outbound of run %s: %w", runID, invalid("step must be 1 to 256 bytes"))
	}
	b, found, err := rc.r.get(ctx, rc.keys.outbound(runID, step))
	if err != nil {
		return nil, false, fmt.Errorf("threads: outbound of run %s step %q: %w", runID, step, err)
	}
	return b, found, nil
}
