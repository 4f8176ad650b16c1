package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/conv"
)

var _ channels.FileFetcher = (*Channel)(nil)

// The hosts Discord serves attachments from: an attachment's url and its proxy_url.
const (
	CDNURL   = "https://cdn.discordapp.com"
	MediaURL = "https://media.discordapp.net"
)

// fetcher downloads the files users attach (FetchFile).
type fetcher struct {
	cfg    *Config
	redact *kit.Redactor
}

// FetchFile downloads an attachment a user sent, from the CDN URL its Inbound carries in
// a.URL — signed by Discord, so no credential is sent: the bot token never leaves for the CDN
// — and only from CDNURL, MediaURL or Config.APIURL's host (kit.FileDownload). Discord states
// every attachment's size: one larger than limit is refused before the download with an error
// wrapping conv.ErrFileTooLarge (as the bytes come, should the size be missing). A link that
// expired (Discord signs attachment URLs for about a day) answers 404. No error holds the URL,
// whose query is its signature.
func (f *fetcher) FetchFile(ctx context.Context, _ conv.Key, a conv.Attachment, limit int64) ([]byte, error) {
	dl := kit.FileDownload{Client: f.cfg.HTTPClient, Origins: []string{CDNURL, MediaURL, f.cfg.APIURL}}
	got, err := dl.Get(ctx, a.URL, a.Size, limit)
	if se, ok := errors.AsType[*kit.DownloadStatusError](err); ok && se.Status == http.StatusNotFound {
		return nil, fmt.Errorf("discord: %w (the attachment's link expired, or the message is gone)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("discord: %w", f.redact.Error(err))
	}
	return got.Data, nil
}
