package slackfake

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// UploadMethod names the POST of a file's bytes to the upload_url files.getUploadURLExternal
// gave, for FailNext and Count: it is not a Web API method, but it can fail as one.
const UploadMethod = "upload"

// uploadPath is where upload URLs point; on the API's own host, as slack-go only sends the
// token (which it attaches to the upload) to Slack's hosts or to the API URL's.
const uploadPath = "/upload/v1/"

// Upload is a file uploaded through Slack's external upload flow: files.getUploadURLExternal
// (Name, Length, the Team whose token asked), the bytes posted to the upload URL (Data), then
// files.completeUploadExternal (Title, and where it was shared: Channel, ThreadTS, with
// InitialComment as the message that introduces it). Shared files are also a message of the
// bot in their channel, whose Files names them.
type Upload struct {
	ID     string
	Name   string
	Length int
	Team   string
	Data   []byte
	// Uploaded: the bytes arrived; Completed: files.completeUploadExternal finished it (once).
	Uploaded, Completed bool
	Title               string
	Channel, ThreadTS   string
	InitialComment      string
	// TS is the ts of the message that shares it ("" when not shared in a channel).
	TS string
	At time.Time
}

// uploads are Slack's external upload flow: files.getUploadURLExternal, the bytes POSTed to the
// upload URL it gave, and files.completeUploadExternal sharing the files as a message of chat's.
type uploads struct {
	st     *store
	url    func() string // the server's base URL
	log    *callLog
	faults *faults
	chat   *chat
	// Guarded by st.mu.
	byID      map[string]*Upload // file id → upload, from files.getUploadURLExternal on
	completed []string           // file ids in the order files.completeUploadExternal finished them
}

// Uploads returns copies of the completed uploads, in the order they were completed.
func (us *uploads) Uploads() []Upload {
	us.st.mu.Lock()
	defer us.st.mu.Unlock()
	var out []Upload
	for _, id := range us.completed {
		u := *us.byID[id]
		u.Data = append([]byte(nil), u.Data...)
		out = append(out, u)
	}
	return out
}

// getUploadURL is files.getUploadURLExternal: filename and length (bytes, > 0) are required.
func (us *uploads) getUploadURL(p map[string]string, team string) (map[string]any, *apiErr) {
	n, err := strconv.Atoi(p["length"])
	if strings.TrimSpace(p["filename"]) == "" || err != nil || n <= 0 {
		return nil, slackErr("invalid_arguments")
	}
	id := fmt.Sprintf("F%09d", us.st.nextLocked())
	us.byID[id] = &Upload{ID: id, Name: p["filename"], Length: n, Team: team}
	return map[string]any{"upload_url": us.url() + uploadPath + id, "file_id": id}, nil
}

// serveUpload takes a file's bytes at its upload URL, raw or multipart-encoded (the first file
// part), as Slack does: HTTP 200 "OK - <length>" when they arrived, 404 for an unknown upload,
// 400 when the bytes do not match the length announced.
func (us *uploads) serveUpload(w http.ResponseWriter, r *http.Request) {
	us.log.arrived(UploadMethod)
	id := strings.TrimPrefix(r.URL.Path, uploadPath)
	record := func(status int) {
		us.log.answered(Call{Method: UploadMethod, Params: map[string]string{"file_id": id}, Status: status, At: time.Now()})
	}
	if r.Method != http.MethodPost {
		record(http.StatusMethodNotAllowed)
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if f := us.faults.take(UploadMethod, nil); f != nil {
		record(f.status)
		if f.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", strconv.Itoa(f.retryAfter))
		}
		status := f.status
		if status == http.StatusOK { // an ok:false fault means a failed upload here
			status = http.StatusInternalServerError
		}
		w.WriteHeader(status)
		return
	}
	data, err := uploadBytes(r)
	us.st.mu.Lock()
	u := us.byID[id]
	status := http.StatusOK
	switch {
	case u == nil || u.Completed:
		status = http.StatusNotFound
	case err != nil || len(data) != u.Length:
		status = http.StatusBadRequest
	default:
		u.Data, u.Uploaded = data, true
	}
	us.st.mu.Unlock()
	record(status)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	if status == http.StatusOK {
		fmt.Fprintf(w, "OK - %d", len(data))
	}
}

// uploadBytes reads an upload's body: the first file part of a multipart form, else the body.
func uploadBytes(r *http.Request) ([]byte, error) {
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	body := io.LimitReader(r.Body, maxUpload+1)
	if ct != "multipart/form-data" {
		b, err := io.ReadAll(body)
		if err == nil && len(b) > maxUpload {
			err = fmt.Errorf("upload over %d bytes", maxUpload)
		}
		return b, err
	}
	mr := multipart.NewReader(body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err != nil {
			return nil, fmt.Errorf("no file part: %w", err)
		}
		if part.FileName() == "" {
			continue
		}
		b, err := io.ReadAll(part)
		if err == nil && len(b) > maxUpload {
			err = fmt.Errorf("upload over %d bytes", maxUpload)
		}
		return b, err
	}
}

// maxUpload bounds one upload the fake keeps.
const maxUpload = 16 << 20

// completeUpload is files.completeUploadExternal: every file must have been uploaded with a
// URL the same workspace asked for, and is completed once; with channel_id it is shared there
// (in thread_ts's thread) as a message of the bot whose text is initial_comment.
func (us *uploads) completeUpload(p map[string]string, team string) (map[string]any, *apiErr) {
	var files []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(p["files"]), &files); err != nil || len(files) == 0 {
		return nil, slackErr("invalid_arguments")
	}
	for _, f := range files {
		u := us.byID[f.ID]
		if u == nil || !u.Uploaded || u.Completed || u.Team != team {
			return nil, slackErr("file_not_found")
		}
	}
	if len([]rune(p["initial_comment"])) > MaxText {
		return nil, slackErr("msg_too_long")
	}
	ch := p["channel_id"]
	var ids []string
	var out []map[string]any
	for _, f := range files {
		u := us.byID[f.ID]
		u.Completed, u.Title, u.Channel, u.ThreadTS, u.InitialComment, u.At = true, f.Title, ch, p["thread_ts"], p["initial_comment"], time.Now()
		if u.Title == "" {
			u.Title = u.Name
		}
		us.completed = append(us.completed, u.ID)
		ids = append(ids, u.ID)
		out = append(out, map[string]any{"id": u.ID, "title": u.Title})
	}
	if ch != "" {
		m := &Message{Channel: ch, TS: us.st.newTSLocked(), ThreadTS: p["thread_ts"], User: BotUserID, Text: p["initial_comment"],
			Files: ids, At: time.Now()}
		us.chat.addLocked(m)
		for _, id := range ids {
			us.byID[id].TS = m.TS
		}
	}
	return map[string]any{"files": out}, nil
}
