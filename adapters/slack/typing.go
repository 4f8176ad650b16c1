package slack

import (
	"context"

	"github.com/switchboard-bot/switchboard/channels"
)

// typer shows that a run works (Typing) as the thread's status (threadStatuses, status.go),
// unless Config.AssistantStatusOff.
type typer struct {
	off    bool
	status *threadStatuses
}

// Typing shows "is thinking…" under the conversation's thread with assistant.threads.setStatus,
// rotating through Config.LoadingMessages (Slack allows it in the threads of AI apps and,
// with chat:write, of channels; a channel that refuses it is not asked again). The
// status is cleared when the run's final message is posted or edited in, or fails to be (the
// run is over either way), and Slack clears it
// itself when the bot replies. A conversation without a thread shows nothing. It is best
// effort: one attempt of at most two seconds, a rate limit skips it. With StatusAfter, the
// status is set that long after the signal, off the caller's path, and only if the message
// signalled for (the latest, when several were) has no final answer by then: a run answered
// sooner costs no status call at all.
func (t *typer) Typing(ctx context.Context, to channels.Target) error {
	if t.off {
		return nil
	}
	return t.status.typing(ctx, to)
}
