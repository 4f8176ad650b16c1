package slack

import (
	"context"
	"fmt"
	"mime"
	"net/http"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/kit"
	"github.com/switchboard-bot/switchboard/core/conv"
)

var _ channels.FileFetcher = (*Channel)(nil)

// FilesURL is where Slack serves the files users share (url_private, url_private_download):
// the one host besides Config.APIURL's that FetchFile sends a token to.
const FilesURL = "https://files.slack.com"

// ErrLoginPage is wrapped by FetchFile's error when Slack answered a file's URL with its HTML
// login page, as it does (status 200) for a token it refuses there: a file of another
// workspace, a revoked token, or an app without the files:read scope. It wraps ErrAuth.
var ErrLoginPage = fmt.Errorf("%w: Slack answered the file's URL with its login page "+
	"(a file of another workspace, a revoked token, or no files:read scope)", ErrAuth)

// fetcher downloads the files users share (FetchFile).
type fetcher struct {
	cfg      *Config
	redact   *kit.Redactor
	installs *installs
}

// FetchFile downloads a file a user shared, from the URL its Inbound carries in a.URL
// (url_private_download, else url_private), with the bot token of the conversation's
// workspace in an Authorization header — the configured token, or k.Workspace's install's,
// as every Web API call of that conversation — and sends it only to FilesURL or Config.APIURL's
// host (kit.FileDownload). A file larger than limit fails with an error wrapping
// conv.ErrFileTooLarge: before the download when the event stated its size (Slack always
// does), else as its bytes come. An HTML answer where the file is not HTML (or is, but not of
// the size Slack stated) is Slack's login page, not the file: an error wrapping ErrLoginPage.
// A file without a URL (Slack hides some, such as those past a free workspace's history) is
// an error. No error holds the URL or the token.
func (f *fetcher) FetchFile(ctx context.Context, k conv.Key, a conv.Attachment, limit int64) ([]byte, error) {
	if err := kit.CheckSize(a.Size, limit); err != nil {
		return nil, fmt.Errorf("slack: %w", err) // before the token's look-up
	}
	token, err := f.installs.token(ctx, k.Workspace)
	if err != nil {
		return nil, err
	}
	dl := kit.FileDownload{Client: f.cfg.HTTPClient, Header: http.Header{"Authorization": {"Bearer " + token}},
		Origins: []string{FilesURL, f.cfg.APIURL}}
	got, err := dl.Get(ctx, a.URL, a.Size, limit)
	if err != nil {
		return nil, fmt.Errorf("slack: %w", f.redact.Error(err))
	}
	if loginPage(got, a) {
		return nil, fmt.Errorf("slack: fetch file: %w", ErrLoginPage)
	}
	return got.Data, nil
}

// loginPage reports whether got, the answer to a's URL, is Slack's login page rather than the
// file: HTML, where a is not an HTML file of that size.
func loginPage(got kit.Downloaded, a conv.Attachment) bool {
	if mt, _, _ := mime.ParseMediaType(got.ContentType); mt != "text/html" {
		return false
	}
	mt, _, _ := mime.ParseMediaType(a.MIME)
	return mt != "text/html" || a.Size > 0 && int64(len(got.Data)) != a.Size
}
