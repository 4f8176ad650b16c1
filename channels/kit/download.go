package kit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/core/conv"
)

// FileDownload is the HTTP half of an adapter's channels.FileFetcher: one GET of a file a user
// sent, with the headers that authenticate it, made only to the platform's own file hosts, and
// its body read up to a limit. Adapters fill in their platform's hosts and credentials; what
// the download guarantees is the same for all:
//
//   - the URL must be http(s), without user info, on one of Origins (scheme, host and port);
//     a redirect is followed only to one of Origins too, so Header never reaches another host;
//   - a size the platform stated over the limit is refused before anything is sent, a
//     Content-Length over it before the body is read, and at most limit+1 bytes are read of a
//     body that does not state its length: all fail with an error wrapping
//     conv.ErrFileTooLarge;
//   - an answer other than 2xx is a *DownloadStatusError (a 429 also a *channels.RateLimitError);
//   - no error's text holds the URL (the HTTP layer's *url.Error quotes it, with whatever
//     token or signature its path and query carry), nor anything of Header.
//
// The zero value refuses every URL; Get is safe for concurrent use.
type FileDownload struct {
	// Client makes the request; nil is http.DefaultClient. Its redirect policy is kept, after
	// the check of the redirect's host.
	Client *http.Client
	// Header is sent with the request, e.g. Authorization; nil sends none.
	Header http.Header
	// Origins are the URLs whose scheme and host (port included, the scheme's default when
	// absent) a file URL must have: the platform's file hosts and the configured API URL (a
	// fake's loopback address in tests). Their paths do not count.
	Origins []string
}

// Downloaded is a downloaded file.
type Downloaded struct {
	Data []byte
	// ContentType is the answer's Content-Type header, as sent.
	ContentType string
}

// ErrFileHost is wrapped by the error of a file URL (or a redirect) that is not on the
// platform's file hosts: nothing was sent to it.
var ErrFileHost = errors.New("the file URL is not on the platform's file hosts")

// DownloadStatusError is a download answered with a status other than 2xx. A 429 unwraps to a
// *channels.RateLimitError of its Retry-After (at least channels.MinRateWait).
type DownloadStatusError struct {
	Status int
	kind   error
}

func (e *DownloadStatusError) Error() string {
	return fmt.Sprintf("download: HTTP %d %s", e.Status, http.StatusText(e.Status))
}

// Unwrap returns the rate limit a 429 means, or nil.
func (e *DownloadStatusError) Unwrap() error { return e.kind }

// maxRedirects is how many redirects a download follows (as net/http's default policy).
const maxRedirects = 10

// maxPrealloc bounds the buffer allocated up front for a body of a stated length; a longer one
// grows as it comes, so a length stated but not sent costs no more.
const maxPrealloc = 32 << 20

// CheckSize is the size check of a download before it is made: an error wrapping
// conv.ErrFileTooLarge when the platform stated a size (size > 0) over limit, an error when
// limit is not positive, else nil. An adapter that must call its platform before the download
// (Telegram's getFile) checks with it first.
func CheckSize(size, limit int64) error {
	if limit <= 0 {
		return errors.New("download: the size limit must be positive")
	}
	if size > limit {
		return fmt.Errorf("download: %w: %d bytes stated, the limit is %d", conv.ErrFileTooLarge, size, limit)
	}
	return nil
}

// Get downloads rawURL, refusing it unless it is on Origins, and reads at most limit bytes of
// it (limit must be positive); size is the file's size as the platform stated it (0 when it did
// not), refused over limit before anything is sent (CheckSize). See FileDownload for the
// guarantees.
func (d FileDownload) Get(ctx context.Context, rawURL string, size, limit int64) (Downloaded, error) {
	if err := CheckSize(size, limit); err != nil {
		return Downloaded{}, err
	}
	if rawURL == "" {
		return Downloaded{}, errors.New("download: the file has no URL")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse's error quotes the URL.
		return Downloaded{}, errors.New("download: the file URL cannot be read")
	}
	if !d.allowed(u) {
		return Downloaded{}, fmt.Errorf("download: %w", ErrFileHost)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Downloaded{}, fmt.Errorf("download: %w", hideURL(err, u))
	}
	for k, vs := range d.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := d.client().Do(req)
	if err != nil {
		return Downloaded{}, fmt.Errorf("download: %w", hideURL(err, u))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Read a little of the answer so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return Downloaded{}, statusError(resp)
	}
	if err := CheckSize(resp.ContentLength, limit); err != nil {
		return Downloaded{}, err
	}
	var buf bytes.Buffer
	if n := resp.ContentLength; n > 0 {
		buf.Grow(int(min(n, maxPrealloc)))
	}
	read := limit
	if read < math.MaxInt64 {
		read++ // one byte past the limit tells a body over it
	}
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, read)); err != nil {
		return Downloaded{}, fmt.Errorf("download: reading the file: %w", hideURL(err, u))
	}
	if int64(buf.Len()) > limit {
		return Downloaded{}, fmt.Errorf("download: %w: more than %d bytes came", conv.ErrFileTooLarge, limit)
	}
	return Downloaded{Data: buf.Bytes(), ContentType: resp.Header.Get("Content-Type")}, nil
}

// client is d.Client with a redirect policy that follows redirects only to d's origins.
func (d FileDownload) client() *http.Client {
	c := *http.DefaultClient
	if d.Client != nil {
		c = *d.Client
	}
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !d.allowed(req.URL) {
			return fmt.Errorf("redirected: %w", ErrFileHost)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return &c
}

// allowed reports whether u may be fetched: http(s), no user info, and the origin of one of
// d.Origins.
func (d FileDownload) allowed(u *url.URL) bool {
	if u.User != nil || u.Opaque != "" {
		return false
	}
	origin, ok := originOf(u)
	if !ok {
		return false
	}
	for _, o := range d.Origins {
		ou, err := url.Parse(o)
		if err != nil {
			continue
		}
		if want, ok := originOf(ou); ok && want == origin {
			return true
		}
	}
	return false
}

// originOf is u's scheme, host and port (the scheme's default when absent), lower-cased;
// ok is false for a URL that is not http(s) or names no host.
func originOf(u *url.URL) (string, bool) {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch scheme {
	case "https":
		if port == "" {
			port = "443"
		}
	case "http":
		if port == "" {
			port = "80"
		}
	default:
		return "", false
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", false
	}
	return scheme + "://" + net.JoinHostPort(host, port), true
}

// statusError is the error of a non-2xx answer.
func statusError(resp *http.Response) error {
	e := &DownloadStatusError{Status: resp.StatusCode}
	if resp.StatusCode == http.StatusTooManyRequests {
		secs, _ := strconv.ParseFloat(resp.Header.Get("Retry-After"), 64)
		wait := time.Duration(secs * float64(time.Second))
		e.kind = &channels.RateLimitError{RetryAfter: max(wait, channels.MinRateWait)}
	}
	return e
}

// hideURL is err without u in its text: a *url.Error (which quotes the URL) is replaced by
// what it wraps, and any text still holding the URL, its path or its query is rewritten. What
// the error wraps (a context's end, a net error) stays reachable with errors.Is and errors.As
// unless its own text holds the URL.
func hideURL(err error, u *url.URL) error {
	if ue, ok := errors.AsType[*url.Error](err); ok && ue.Err != nil {
		err = ue.Err
	}
	text := err.Error()
	clean := text
	for _, part := range []string{u.String(), u.EscapedPath(), u.Path, u.RawQuery} {
		if len(part) > 1 {
			clean = strings.ReplaceAll(clean, part, "[file URL]")
		}
	}
	if clean == text {
		return err
	}
	return errors.New(clean)
}
