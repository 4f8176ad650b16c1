package telegramfake

import (
	"io"
	"net/http"
	"strconv"
	"time"
)

// Limits of sendDocument the fake enforces, as the Bot API documents them.
const (
	// MaxCaptionLen is the longest caption (characters shown, in UTF-16 code units).
	MaxCaptionLen = 1024
	// MaxUploadSize is the largest file a bot may upload (50 MB).
	MaxUploadSize = 50 << 20
)

// Document is a file the bot sent with sendDocument, as the fake keeps it.
type Document struct {
	FileID   string
	FileName string
	MimeType string
	Data     []byte
}

// WireDocument is the document field of a Message on the wire.
type WireDocument struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileName     string `json:"file_name,omitempty"`
	MimeType     string `json:"mime_type,omitempty"`
	FileSize     int    `json:"file_size,omitempty"`
}

// uploadedFile reads the multipart file field of r (after readParams parsed the form), or
// reports false when there is none.
func uploadedFile(r *http.Request, field string) (name, mimeType string, data []byte, ok bool, err error) {
	if r.MultipartForm == nil || len(r.MultipartForm.File[field]) == 0 {
		return "", "", nil, false, nil
	}
	fh := r.MultipartForm.File[field][0]
	f, err := fh.Open()
	if err != nil {
		return "", "", nil, false, err
	}
	defer f.Close()
	data, err = io.ReadAll(io.LimitReader(f, MaxUploadSize+1))
	if err != nil {
		return "", "", nil, false, err
	}
	return fh.Filename, fh.Header.Get("Content-Type"), data, true, nil
}

// documents is sendDocument: files the bot posts as messages of messages' chats.
type documents struct{ msgs *messages }

// sendDocument posts a file: document is a multipart upload (a file id or URL string is refused,
// the fake keeps no files to refer to), with an optional caption (parse_mode as for messages),
// message_thread_id and reply_parameters. The caller holds the messages' lock.
func (dc *documents) sendDocument(r *http.Request, p map[string]string) (any, *apiError) {
	cid, aerr := chatID(p)
	if aerr != nil {
		return nil, aerr
	}
	name, mimeType, data, ok, err := uploadedFile(r, "document")
	switch {
	case err != nil:
		return nil, badRequest("failed to read the uploaded file")
	case !ok && p["document"] != "":
		return nil, badRequest("wrong file identifier/HTTP URL specified")
	case !ok:
		return nil, badRequest("there is no document in the request")
	case len(data) == 0:
		return nil, badRequest("file must be non-empty")
	case len(data) > MaxUploadSize:
		return nil, &apiError{code: 413, desc: "Request Entity Too Large"}
	}
	if c := p["caption"]; c != "" {
		visible := c
		if p["parse_mode"] == "HTML" {
			v, err := ParseHTML(c)
			if err != nil {
				return nil, badRequest("can't parse entities: " + err.Error())
			}
			visible = v
		}
		if utf16Len(visible) > MaxCaptionLen {
			return nil, badRequest("message caption is too long")
		}
	}
	c := dc.msgs.chatLocked(cid)
	thread, _ := strconv.Atoi(p["message_thread_id"])
	c.nextID++
	m := &Message{ID: c.nextID, ChatID: cid, ThreadID: thread, Text: p["caption"], ParseMode: p["parse_mode"], FromUser: BotID, At: time.Now(),
		Document: &Document{FileID: "doc-" + strconv.FormatInt(cid, 10) + "-" + strconv.Itoa(c.nextID), FileName: name, MimeType: mimeType, Data: data}}
	c.msgs[m.ID] = m
	c.order = append(c.order, m.ID)
	return wireOut(m), nil
}
