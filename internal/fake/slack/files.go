package slackfake

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/internal/fake/filehost"
)

// DownloadMethod names the downloads of shared files' bytes (GET of a url_private or
// url_private_download) for Count and CallsOf: not a Web API method, but logged as one.
const DownloadMethod = "files-pri"

// filesPath is where the fake serves the files users share, as files.slack.com does:
// /files-pri/<team>-<file id>/<name>, and /files-pri/<team>-<file id>/download/<name>.
const filesPath = "/files-pri/"

// LoginPage is what Slack answers, with status 200 and Content-Type text/html, to a file URL
// fetched without a token it accepts for that file.
const LoginPage = `<!DOCTYPE html><html lang="en"><head><title>Slack</title></head>` +
	`<body><h1>Sign in to your workspace</h1><form action="/signin" method="post"></form></body></html>`

// NewFile describes a file a user shares, for AddFile.
type NewFile struct {
	// Team is the workspace the file belongs to; default TeamID. Only a bot token of that
	// workspace may fetch it.
	Team string
	Name string
	MIME string
	Data []byte
	// Size, when > 0, is the size the file object states instead of len(Data).
	Size int64
	// Unsized serves the bytes without a Content-Length (chunked).
	Unsized bool
}

// FileFault is a failure of a file's download: Status answers that HTTP status (with an error
// page); Cut sends the headers (with the whole Content-Length) and half the bytes, then drops
// the connection.
type FileFault = filehost.Fault

// files are the files users share (AddFile), served at their url_private and
// url_private_download to a bot token of their workspace.
type files struct {
	st    *store
	url   func() string // the server's base URL
	log   *callLog
	oauth *oauth
	// shared is guarded by st.mu.
	shared map[string]*sharedFile // file id → a file users shared (AddFile)
}

// sharedFile is a file AddFile registered, as the fake keeps it.
type sharedFile struct {
	team   string
	body   filehost.File
	faults filehost.Faults
}

// AddFile registers a file a user shares and returns the File to put in Msg.Files: its event
// file object carries url_private and url_private_download on the fake, which serve the bytes
// to a bot token of the file's workspace (an Authorization: Bearer header) and Slack's login
// page, with status 200, to any other token or none.
func (fs *files) AddFile(f NewFile) File {
	if f.Team == "" {
		f.Team = TeamID
	}
	size := f.Size
	if size <= 0 {
		size = int64(len(f.Data))
	}
	fs.st.mu.Lock()
	defer fs.st.mu.Unlock()
	id := fmt.Sprintf("F%09d", fs.st.nextLocked())
	if fs.shared == nil {
		fs.shared = map[string]*sharedFile{}
	}
	fs.shared[id] = &sharedFile{team: f.Team, body: filehost.File{Data: append([]byte(nil), f.Data...), ContentType: f.MIME, Unsized: f.Unsized}}
	base := fs.url() + filesPath + f.Team + "-" + id + "/"
	return File{ID: id, Name: f.Name, MIME: f.MIME, Size: size,
		URLPrivate: base + url.PathEscape(f.Name), URLPrivateDownload: base + "download/" + url.PathEscape(f.Name)}
}

// FailFile makes the next n downloads of file id fail with f.
func (fs *files) FailFile(id string, n int, f FileFault) {
	fs.st.mu.Lock()
	defer fs.st.mu.Unlock()
	if sf := fs.shared[id]; sf != nil {
		sf.faults.Fail(n, f)
	}
}

// serveFile serves a shared file's bytes: Slack's login page (200, text/html) without a bot
// token of the file's workspace, 404 for an unknown file, the file's faults first.
func (fs *files) serveFile(w http.ResponseWriter, r *http.Request) {
	fs.log.arrived(DownloadMethod)
	ref, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, filesPath), "/")
	_, id, _ := strings.Cut(ref, "-")
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	fs.st.mu.Lock()
	f := fs.shared[id]
	team, authed := fs.oauth.teamLocked(token)
	var fault *FileFault
	if f != nil && authed && team == f.team {
		fault = f.faults.Take()
	}
	fs.st.mu.Unlock()
	status := http.StatusOK
	defer func() {
		fs.log.answered(Call{Method: DownloadMethod, Params: map[string]string{"file_id": id}, Auth: authOf(token), Team: team,
			Status: status, At: time.Now()})
	}()
	switch {
	case r.Method != http.MethodGet:
		status = http.StatusMethodNotAllowed
		w.WriteHeader(status)
	case !authed || f != nil && team != f.team:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, LoginPage)
	case f == nil:
		status = http.StatusNotFound
		http.Error(w, "file not found", status)
	case fault != nil && !fault.Cut:
		status = fault.Status
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "<html>error</html>")
	default:
		status = filehost.Serve(w, f.body, fault)
	}
}

func authOf(token string) string {
	if token == "" {
		return ""
	}
	return "bearer"
}
