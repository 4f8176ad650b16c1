package discord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/render"
)

var (
	_ channels.FileSender = (*Channel)(nil)
	_ channels.Pager      = (*Channel)(nil)
)

// MaxFileBytes is the largest file a bot can attach to a message without boosts (10 MiB).
const MaxFileBytes = 10 << 20

// Pages reports how many Discord messages Send would post for m: the same split Send makes
// (2,000 characters of content, 6,000 of embeds a message).
// A card's rendering is kept for its Send or Edit (kit.Pages).
func (s *sender) Pages(m channels.Message) (int, error) { return s.pages.Count(m) }

// SendFile posts a message carrying f.Data as the file f.Name (a multipart/form-data post:
// payload_json with f.Caption as its content — shown as plain text, cut to 2,000 characters — and
// files[0]) in the conversation's channel or thread, allowed_mentions parsing nothing like every
// message of the adapter. Like Send's messages it carries a nonce with enforce_nonce, derived
// from f.Key when set, so a file sent again by a later attempt of its run returns the message
// already made instead of posting the file twice. A 429 is returned as a
// *channels.RateLimitError for delivery to wait out (see call); a refusal is Discord's error (channels.ErrUnreachable for a channel
// the bot cannot post to). The ref names the message.
func (s *sender) SendFile(ctx context.Context, to channels.Target, f channels.File) (channels.MessageRef, error) {
	ref := channels.MessageRef{Conv: to.Conv}
	switch {
	case len(f.Data) == 0:
		return ref, errors.New("discord: send file: empty file")
	case len(f.Data) > MaxFileBytes:
		return ref, errors.New("discord: send file: over Discord's 10 MiB")
	case strings.TrimSpace(f.Name) == "":
		return ref, errors.New("discord: send file: no file name")
	}
	chID, err := s.threads.channelFor(ctx, to.Conv)
	if err != nil {
		return ref, err
	}
	body := createBody{Content: fileCaption(f.Caption), AllowedMentions: allowedMentions{Parse: []string{}},
		Nonce: nonceFor(f.Key, 0), EnforceNonce: true}
	file := &discordgo.File{Name: f.Name, ContentType: contentType(f.Name), Reader: bytes.NewReader(f.Data)}
	ct, post, err := discordgo.MultipartBodyWithJSON(body, []*discordgo.File{file})
	if err != nil {
		return ref, fmt.Errorf("discord: send file: %w", err)
	}
	id, err := s.create(ctx, false, "send file", chID, ct, post)
	if err != nil {
		return ref, err
	}
	ref.IDs = []string{id}
	return ref, nil
}

// fileCaption is caption as Discord shows plain text: markdown escaped, mentions neutralized,
// cut to MaxContent characters (ending in "…" when cut).
func fileCaption(caption string) string {
	s := render.NeutralizeMentions(render.EscapeDiscord(caption))
	if r := []rune(s); len(r) > MaxContent {
		s = strings.TrimRight(string(r[:MaxContent-1]), "\\") + "…"
	}
	return s
}

// contentType is the file's type by its name: markdown and plain text as UTF-8 text.
func contentType(name string) string {
	switch {
	case strings.HasSuffix(name, ".md"):
		return "text/markdown; charset=utf-8"
	case strings.HasSuffix(name, ".txt"):
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}
