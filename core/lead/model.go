package lead

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboard-bot/switchboard/core/llm"
	"github.com/switchboard-bot/switchboard/core/runs"
)

// What users read when the model fails; short, no internals, no secrets.
const (
	noticeUnavailable = "_The model is not answering right now. I will keep trying, and the answer will follow here as soon as it is back._"
	noticeCut         = "_The model's answer was cut off. I am asking again; the full answer will follow here._"
	reasonUnavailable = "The model was unavailable for too long, so this request could not be answered. Please try again later."
	reasonCut         = "The model's answer was cut off every time it was asked, so it is not shown. Please try again later."
	reasonAuth        = "The model provider refused the bot's API key, so it cannot answer. An admin needs to check the bot's model configuration."
	reasonNoModel     = "The model provider does not know the model the bot is configured with. An admin needs to check the bot's model configuration."
	reasonBadRequest  = "The model provider refused this request (HTTP %d). Try rephrasing it, or start over with /new."
)

// modelFailed ends an attempt whose lead turn failed on the model. A failure that may pass
// (5xx, 429, a timeout, a refused connection, a stream cut mid-answer) tells the user once —
// a notice on the run's card, which the answer replaces — and returns an *runs.UnavailableError,
// so the queue tries the whole run again later; nothing of the failed attempt's partial answer
// is kept. Any other failure (401, 404, 400) ends the run at once with a short reason.
func (t *Team) modelFailed(ctx context.Context, run *runs.Run, err error) (runs.Outcome, error) {
	id := run.Envelope.RunID
	if llm.Temporary(err) {
		notice, reason := noticeUnavailable, reasonUnavailable
		if errors.Is(err, llm.ErrStreamCut) {
			notice, reason = noticeCut, reasonCut
		}
		if eerr := run.Emit(ctx, runs.Event{Kind: runs.EventProgress, Text: notice}); eerr != nil {
			t.log.Warn("lead: telling the user the model is unavailable failed", "run", id, "err", eerr)
		}
		u := &runs.UnavailableError{Err: fmt.Errorf("lead: the model failed: %w", err), Reason: reason}
		if se, ok := errors.AsType[*llm.StatusError](err); ok {
			u.RetryAfter = se.RetryAfter
		}
		return "", u
	}
	t.log.Error("lead: the model refused the run's request; the run fails", "run", id, "attempt", run.Envelope.Attempt, "err", err)
	return t.finish(ctx, run, runs.Event{Kind: runs.EventFailed, Reason: permanentReason(err)}, runs.OutcomeFailed, nil)
}

// permanentReason is what the user reads about a model failure that retrying will not fix.
func permanentReason(err error) string {
	switch {
	case errors.Is(err, llm.ErrAuth):
		return reasonAuth
	case errors.Is(err, llm.ErrNotFound):
		return reasonNoModel
	}
	if se, ok := errors.AsType[*llm.StatusError](err); ok {
		return fmt.Sprintf(reasonBadRequest, se.StatusCode)
	}
	return reasonFailed
}
