package discordfake

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/internal/fake/filehost"
)

// The paths the fake serves attachments at, as Discord's CDN (cdn.discordapp.com, an
// attachment's url) and media proxy (media.discordapp.net, its proxy_url) do:
// /attachments/<channel>/<attachment>/<filename>?ex=…&is=…&hm=….
const (
	cdnPath   = "/attachments/"
	mediaPath = "/media/attachments/"
)

// NoLongerAvailable is what Discord's CDN answers, with 404, to an attachment URL whose
// signature is missing, wrong or expired.
const NoLongerAvailable = "This content is no longer available."

// NewFile describes a file a user attaches to a message, for AddFile.
type NewFile struct {
	Filename    string
	ContentType string
	Data        []byte
	// Size, when > 0, is the size the attachment object states instead of len(Data).
	Size int64
	// Unsized serves the bytes without a Content-Length (chunked).
	Unsized bool
}

// FileFault is a failure of an attachment's download: Status answers that HTTP status; Cut
// sends the headers (with the whole Content-Length) and half the bytes, then drops the
// connection.
type FileFault = filehost.Fault

// Download is one GET of an attachment's bytes, in arrival order.
type Download struct {
	// ID is the attachment's id ("" when the path names none).
	ID     string
	Status int
	// Authorization: the request carried an Authorization header (a bot sends none to the CDN).
	Authorization bool
}

// cdn is where the files users attach are: AddFile registers one, and the fake serves its
// bytes at its signed url and proxy_url, as Discord's CDN and media proxy do.
type cdn struct {
	st  *store
	url func() string // the server's base URL
	// Guarded by st.mu.
	files     map[string]*userFile // attachment id → a file users attached (AddFile)
	downloads []Download
}

// userFile is an attachment AddFile registered, as the fake keeps it.
type userFile struct {
	body   filehost.File
	sig    string // the hm of its signed URL
	faults filehost.Faults
}

// AddFile registers a file a user attaches to a message in channelID and returns the
// Attachment to put in UserMessage.Attachments: an id, the filename, content type and size,
// and a signed url (and proxy_url) on the fake. The fake serves the bytes at both, to anyone
// with the signature (ex, is, hm) intact — no token needed — and answers 404
// NoLongerAvailable to a URL without it.
func (c *cdn) AddFile(channelID string, f NewFile) Attachment {
	size := f.Size
	if size <= 0 {
		size = int64(len(f.Data))
	}
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	id := c.st.newIDLocked()
	now := time.Now()
	ex, is := strconv.FormatInt(now.Add(24*time.Hour).Unix(), 16), strconv.FormatInt(now.Unix(), 16)
	sum := sha256.Sum256([]byte(id + ":" + ex + ":" + is))
	sig := hex.EncodeToString(sum[:])
	if c.files == nil {
		c.files = map[string]*userFile{}
	}
	c.files[id] = &userFile{body: filehost.File{Data: append([]byte(nil), f.Data...), ContentType: f.ContentType, Unsized: f.Unsized}, sig: sig}
	// Discord's signed URLs end with a '&'.
	rest := channelID + "/" + id + "/" + url.PathEscape(f.Filename) + "?ex=" + ex + "&is=" + is + "&hm=" + sig + "&"
	return Attachment{ID: id, Filename: f.Filename, ContentType: f.ContentType, Size: size,
		URL: c.url() + cdnPath + rest, ProxyURL: c.url() + mediaPath + rest}
}

// FailFile makes the next n downloads of attachment id fail with f.
func (c *cdn) FailFile(id string, n int, f FileFault) {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if uf := c.files[id]; uf != nil {
		uf.faults.Fail(n, f)
	}
}

// Downloads returns the attachment downloads so far.
func (c *cdn) Downloads() []Download {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	return append([]Download(nil), c.downloads...)
}

// serveAttachment serves an attachment's bytes at its url or proxy_url: 404 NoLongerAvailable
// for an unknown attachment or a signature that is not the one issued, the file's faults first.
func (c *cdn) serveAttachment(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/media"), cdnPath)
	parts := strings.Split(rest, "/")
	id := ""
	if len(parts) == 3 {
		id = parts[1]
	}
	c.st.mu.Lock()
	f := c.files[id]
	signed := f != nil && r.URL.Query().Get("hm") == f.sig
	var fault *FileFault
	status := http.StatusNotFound
	if signed {
		fault = f.faults.Take()
		status = filehost.Status(fault)
	}
	// Recorded before the answer: a client that sees the connection cut, or stops reading
	// early, must find its download in Downloads.
	c.downloads = append(c.downloads, Download{ID: id, Status: status, Authorization: r.Header.Get("Authorization") != ""})
	c.st.mu.Unlock()
	if !signed {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, NoLongerAvailable)
		return
	}
	filehost.Serve(w, f.body, fault)
}
