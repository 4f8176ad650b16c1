package slack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	slackgo "github.com/slack-go/slack"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/render"
)

var (
	_ channels.FileSender = (*Channel)(nil)
	_ channels.Pager      = (*Channel)(nil)
)

// MaxCaption is the longest comment SendFile shares a file with; longer captions are cut.
const MaxCaption = MaxSectionText

// The Web API methods of a file upload, and the name rate limits and errors of the byte upload
// (a POST to the URL Slack gives, not a method) are counted under.
const (
	methodUploadURL = "files.getUploadURLExternal"
	methodUpload    = "upload_url"
	methodComplete  = "files.completeUploadExternal"
)

// errPrivateFile: a file cannot be shown to one user only (an answer to a slash command is
// ephemeral), so it is not shared with the whole channel instead.
var errPrivateFile = errors.New("slack: send file: the answer is visible to one user only, and a file would be shared with the channel")

// Pages reports how many Slack messages Send would post for m: the same split Send makes (a
// card past 50 blocks continues in a further message; text 12 sections of 3,000 characters a
// message).
// A card's rendering is kept for its Send or Edit (kit.Pages).
func (s *sender) Pages(m channels.Message) (int, error) { return s.pages.Count(m) }

// SendFile uploads data as a file named name and shares it in the conversation's channel and
// thread (Conv.Thread), introduced by caption as plain text (cut to MaxCaption characters):
// Slack's external upload — files.getUploadURLExternal, the bytes POSTed to the upload URL it
// returns, files.completeUploadExternal. A rate limit of any step is returned as
// *channels.RateLimitError for delivery to send the file again (nothing shows before the last
// step); a refusal is an *APIError naming the step. A target that
// answers one user privately (a slash command's reply) is refused, since a shared file would
// show the answer to everyone. The ref names the file (its id): the message sharing it is
// posted by Slack as the upload completes, and is not edited.
func (s *sender) SendFile(ctx context.Context, to channels.Target, f channels.File) (channels.MessageRef, error) {
	name, data, caption := f.Name, f.Data, f.Caption
	ref := channels.MessageRef{Conv: to.Conv}
	switch {
	case to.Conv.Chat == "":
		return ref, errors.New("slack: send file: no channel")
	case len(data) == 0:
		return ref, errors.New("slack: send file: empty file")
	case strings.TrimSpace(name) == "":
		return ref, errors.New("slack: send file: no file name")
	case strings.HasPrefix(to.ReplyTo, ephemeralPrefix):
		return ref, errPrivateFile
	}
	if s.cfg.Pacing {
		// Sharing the file posts a message in the channel: it keeps the channel's pace.
		if err := s.clock.Sleep(ctx, s.pacer.reserve(to.Conv.Chat, s.clock.Now())); err != nil {
			return ref, fmt.Errorf("slack: send file: %w", err)
		}
	}
	api, err := s.installs.client(ctx, to.Conv.Workspace)
	if err != nil {
		return ref, err
	}
	var up *slackgo.GetUploadURLExternalResponse
	err = s.web.call(ctx, to.Conv.Workspace, methodUploadURL, func(ctx context.Context) error {
		var err error
		up, err = api.GetUploadURLExternalContext(ctx, slackgo.GetUploadURLExternalParameters{FileName: name, FileSize: len(data)})
		return err
	})
	if err != nil {
		return ref, err
	}
	if up == nil || up.UploadURL == "" || up.FileID == "" {
		return ref, fmt.Errorf("slack: %s: the answer has no upload URL or file id", methodUploadURL)
	}
	err = s.web.call(ctx, to.Conv.Workspace, methodUpload, func(ctx context.Context) error {
		// A fresh reader each attempt: a rate-limited upload is sent again whole.
		return api.UploadToURL(ctx, slackgo.UploadToURLParameters{UploadURL: up.UploadURL, Filename: name, Reader: bytes.NewReader(data)})
	})
	if err != nil {
		return ref, hideUploadURL(err, up.UploadURL)
	}
	err = s.web.call(ctx, to.Conv.Workspace, methodComplete, func(ctx context.Context) error {
		_, err := api.CompleteUploadExternalContext(ctx, slackgo.CompleteUploadExternalParameters{
			Files:           []slackgo.FileSummary{{ID: up.FileID, Title: name}},
			Channel:         to.Conv.Chat,
			ThreadTimestamp: to.Conv.Thread,
			InitialComment:  captionText(caption),
		})
		return err
	})
	if err != nil {
		return ref, err
	}
	ref.IDs = []string{up.FileID}
	return ref, nil
}

// captionText is caption as Slack shows plain text: cut to MaxCaption characters (ending in
// "…" when cut), then escaped so nothing in it reads as a link or a mention.
func captionText(caption string) string {
	if r := []rune(caption); len(r) > MaxCaption {
		caption = string(r[:MaxCaption-1]) + "…"
	}
	return render.EscapeSlack(caption)
}

// hideUploadURL keeps the upload URL — a one-time address that takes the file — out of an
// error's text (an HTTP client error quotes the URL it failed on); what the error wraps
// (*channels.RateLimitError, *APIError, a context's end) is kept for errors.Is and errors.As.
func hideUploadURL(err error, uploadURL string) error {
	if s := err.Error(); strings.Contains(s, uploadURL) {
		return &hiddenURLError{text: strings.ReplaceAll(s, uploadURL, "[upload URL]"), err: err}
	}
	return err
}

type hiddenURLError struct {
	text string
	err  error
}

func (e *hiddenURLError) Error() string { return e.text }
func (e *hiddenURLError) Unwrap() error { return e.err }
