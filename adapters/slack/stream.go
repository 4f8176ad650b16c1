package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/conv"
)

// MaxStreamText is Slack's limit of markdown_text in one streaming call; longer text is sent
// in several calls.
const MaxStreamText = 12000

var _ channels.Streamer = (*Channel)(nil)

// streamer streams answers in threads natively (channels.Streamer: chat.startStream,
// appendStream, stopStream), with the token of each conversation's workspace; a channel that
// does not know the method is not asked again.
type streamer struct {
	cfg      *Config
	web      *webAPI
	installs *installs
	clock    *kit.Clock
	pacer    *pacer
	status   *threadStatuses
	noStream sync.Map // channel id → struct{}: chat.startStream unknown there
}

// streamRefusals are the codes with which Slack declines to stream in a conversation: the
// method is unknown to the workspace, the recipient is not found, the message left its
// streaming state (Slack ends streams on its side), the recipient is missing.
func streamRefusal(code string) bool {
	switch code {
	case "unknown_method", "user_not_found", "message_not_in_streaming_state", "missing_recipient_user_id",
		"missing_recipient_team_id", "not_allowed_token_type", "method_deprecated", "feature_not_enabled":
		return true
	}
	return false
}

// CanStream reports whether an answer may stream in the conversation: streaming is on
// (Config.StreamingOff unset), the conversation is a thread (Slack streams replies only), it is
// not a slash command's private answer, and the channel has not refused a stream before.
func (sm *streamer) CanStream(to channels.Target) bool {
	k := to.Conv
	if sm.cfg.StreamingOff || k.Chat == "" || k.Thread == "" || strings.HasPrefix(to.ReplyTo, ephemeralPrefix) {
		return false
	}
	_, refused := sm.noStream.Load(k.Chat)
	return !refused
}

// streamError classifies a streaming call's failure: a refusal, or any ok:false answer that is
// not about the token, the conversation's reachability or the message being gone (a
// conversation that is not an assistant thread answers with a code of its own), wraps
// channels.ErrStreamRefused, so delivery goes on by post-and-edit. Rate limits pass as they are.
func streamError(err error) error {
	ae, ok := errors.AsType[*APIError](err)
	if !ok {
		return err
	}
	if streamRefusal(ae.Code) || len(ae.kinds) == 0 || errors.Is(ae, channels.ErrCardRefused) {
		return fmt.Errorf("%w: %w", channels.ErrStreamRefused, err)
	}
	return err
}

// recipient is the team and user a stream outside a DM goes to: the conversation's team (the
// workspace's part after "/" on Enterprise Grid) and the user part of the channel_user_id.
func recipient(k conv.Key, channelUserID string) (team, user string) {
	team = k.Workspace
	if _, t, ok := strings.Cut(team, "/"); ok {
		team = t
	}
	if i := strings.LastIndexByte(channelUserID, ':'); i >= 0 {
		user = channelUserID[i+1:]
	}
	return team, user
}

func isDM(channel string) bool { return strings.HasPrefix(channel, "D") }

// splitStreamText cuts text into pieces of at most MaxStreamText characters, never inside a
// character; "" is one empty piece.
func splitStreamText(text string) []string {
	var out []string
	for utf8.RuneCountInString(text) > MaxStreamText {
		cut, n := 0, 0
		for i := range text {
			if n == MaxStreamText {
				cut = i
				break
			}
			n++
		}
		out = append(out, text[:cut])
		text = text[cut:]
	}
	return append(out, text)
}

// streamOptions are a streaming call's content: text as markdown_text alone, or, with a plan
// title or tasks, all of it as chunks (plan, tasks, then the text).
func streamOptions(text string, u channels.StreamUpdate) []slackgo.MsgOption {
	if u.Plan == "" && len(u.Tasks) == 0 {
		if text == "" {
			return nil
		}
		return []slackgo.MsgOption{slackgo.MsgOptionMarkdownText(text)}
	}
	var cs []slackgo.StreamChunk
	if u.Plan != "" {
		cs = append(cs, slackgo.NewPlanUpdateChunk(u.Plan))
	}
	for _, t := range u.Tasks {
		ch := slackgo.NewTaskUpdateChunk(t.ID, t.Title)
		ch.Status = slackgo.TaskCardStatus(t.Status)
		ch.Output = t.Output
		cs = append(cs, ch)
	}
	if text != "" {
		cs = append(cs, slackgo.NewMarkdownTextChunk(text))
	}
	return []slackgo.MsgOption{slackgo.MsgOptionChunks(cs...)}
}

// StartStream starts the answer's stream in the conversation's thread (chat.startStream, tasks
// shown as a plan), to its recipient outside a DM; text beyond one call's limit follows in
// appends. A refusal wraps channels.ErrStreamRefused; a channel that does not know the method
// is not asked again.
func (sm *streamer) StartStream(ctx context.Context, to channels.Target, u channels.StreamUpdate) (channels.MessageRef, error) {
	k := to.Conv
	ref := channels.MessageRef{Conv: k}
	opts := []slackgo.MsgOption{slackgo.MsgOptionTS(k.Thread), slackgo.MsgOptionTaskDisplayMode(slackgo.TaskDisplayModePlan)}
	if !isDM(k.Chat) {
		team, user := recipient(k, to.User)
		if team == "" || user == "" {
			return ref, fmt.Errorf("slack: chat.startStream: %w: no recipient to stream to in a channel", channels.ErrStreamRefused)
		}
		opts = append(opts, slackgo.MsgOptionRecipientTeamID(team), slackgo.MsgOptionRecipientUserID(user))
	}
	pieces := splitStreamText(u.Text)
	if sm.cfg.Pacing {
		if err := sm.clock.Sleep(ctx, sm.pacer.reserve(k.Chat, sm.clock.Now())); err != nil {
			return ref, fmt.Errorf("slack: chat.startStream: %w", err)
		}
	}
	api, err := sm.installs.client(ctx, k.Workspace)
	if err != nil {
		return ref, err
	}
	var ts string
	err = sm.web.call(ctx, k.Workspace, "chat.startStream", func(ctx context.Context) error {
		var err error
		_, ts, err = api.StartStreamContext(ctx, k.Chat, append(opts, streamOptions(pieces[0], u)...)...)
		return err
	})
	if err != nil {
		if ae, ok := errors.AsType[*APIError](err); ok && ae.Code == "unknown_method" {
			sm.noStream.Store(k.Chat, struct{}{})
		}
		return ref, streamError(err)
	}
	ref.IDs = []string{ts}
	for _, p := range pieces[1:] {
		// The stream started: a 429 now is waited out, as a retry would start another.
		if err := sm.appendOnce(ctx, true, api, ref, p, channels.StreamUpdate{}); err != nil {
			return ref, err
		}
	}
	return ref, nil
}

// appendOnce makes one chat.appendStream call; wait says a 429 is waited out here (part of the
// operation was taken already) rather than returned (see call).
func (sm *streamer) appendOnce(ctx context.Context, wait bool, api *slackgo.Client, ref channels.MessageRef, text string, u channels.StreamUpdate) error {
	opts := streamOptions(text, u)
	if len(opts) == 0 {
		return nil
	}
	err := sm.web.callMaybeWaiting(ctx, wait, ref.Conv.Workspace, "chat.appendStream", func(ctx context.Context) error {
		_, _, err := api.AppendStreamContext(ctx, ref.Conv.Chat, ref.ID(), opts...)
		return err
	})
	return streamError(err)
}

// AppendStream adds u to the stream (chat.appendStream), in several calls when its text is
// longer than one call takes.
func (sm *streamer) AppendStream(ctx context.Context, ref channels.MessageRef, u channels.StreamUpdate) error {
	if ref.ID() == "" {
		return fmt.Errorf("slack: chat.appendStream: %w: no stream", channels.ErrStreamRefused)
	}
	api, err := sm.installs.client(ctx, ref.Conv.Workspace)
	if err != nil {
		return err
	}
	for i, p := range splitStreamText(u.Text) {
		part := channels.StreamUpdate{}
		if i == 0 {
			part = u
		}
		if err := sm.appendOnce(ctx, i > 0, api, ref, p, part); err != nil {
			return err
		}
	}
	return nil
}

// StopStream adds u and ends the stream (chat.stopStream; text beyond one call's limit goes in
// appends before it), then clears the thread's status — also when ending the stream fails.
func (sm *streamer) StopStream(ctx context.Context, ref channels.MessageRef, u channels.StreamUpdate) (err error) {
	if ref.ID() == "" {
		return fmt.Errorf("slack: chat.stopStream: %w: no stream", channels.ErrStreamRefused)
	}
	defer func() {
		if err != nil {
			sm.status.clearAnyway(ctx, ref.Conv, "")
		}
	}()
	api, err := sm.installs.client(ctx, ref.Conv.Workspace)
	if err != nil {
		return err
	}
	pieces := splitStreamText(u.Text)
	for i, p := range pieces[:len(pieces)-1] {
		if err := sm.appendOnce(ctx, i > 0, api, ref, p, channels.StreamUpdate{}); err != nil {
			return err
		}
	}
	opts := streamOptions(pieces[len(pieces)-1], u)
	err = sm.web.callMaybeWaiting(ctx, len(pieces) > 1, ref.Conv.Workspace, "chat.stopStream", func(ctx context.Context) error {
		_, _, err := api.StopStreamContext(ctx, ref.Conv.Chat, ref.ID(), opts...)
		return err
	})
	if err != nil {
		return streamError(err)
	}
	sm.status.clear(ctx, ref.Conv, "")
	return nil
}
