package discordfake

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
)

// Limits of a message's files, as Discord sets them for a bot without boosts.
const (
	MaxAttachments     = 10
	MaxAttachmentBytes = 10 << 20 // all of a message's files together
)

// File is a file the bot attached to a message (files[n] of a multipart message post).
type File struct {
	ID          string
	Name        string
	ContentType string
	Data        []byte
}

// readMessagePost reads a message post's JSON: the body itself, or — multipart/form-data, as
// Discord takes messages with files — its payload_json part, with the files of its files[n]
// parts. A status other than 0 is Discord's answer to a post it refuses.
func readMessagePost(r *http.Request, body []byte) (payload []byte, files []File, status int, resp any) {
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "multipart/form-data" {
		return body, nil, 0, nil
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	total := 0
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			st, resp := errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: unreadable multipart body")
			return nil, nil, st, resp
		}
		data, err := io.ReadAll(io.LimitReader(part, MaxAttachmentBytes+1))
		if err != nil {
			st, resp := errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: unreadable multipart body")
			return nil, nil, st, resp
		}
		name := part.FormName()
		switch {
		case name == "payload_json":
			payload = data
		case strings.HasPrefix(name, "files[") && strings.HasSuffix(name, "]"):
			if part.FileName() == "" {
				st, resp := errorResp(http.StatusBadRequest, 50035, fmt.Sprintf("Invalid Form Body: %s: no filename", name))
				return nil, nil, st, resp
			}
			total += len(data)
			files = append(files, File{Name: part.FileName(), ContentType: part.Header.Get("Content-Type"), Data: data})
		}
	}
	switch {
	case len(files) > MaxAttachments:
		st, resp := errorResp(http.StatusBadRequest, 50035, "Invalid Form Body: files: Must be 10 or fewer in length.")
		return nil, nil, st, resp
	case total > MaxAttachmentBytes:
		st, resp := errorResp(http.StatusRequestEntityTooLarge, 40005, "Request entity too large")
		return nil, nil, st, resp
	case payload == nil:
		payload = []byte("{}")
	}
	return payload, files, 0, nil
}

// FilesPosted returns the files the bot attached to its visible messages in channelID, in the
// order posted.
func (ms *messages) FilesPosted(channelID string) []File {
	var out []File
	for _, m := range ms.PostedByBot(channelID) {
		out = append(out, m.Files...)
	}
	return out
}

func filesWire(m *Message) []any {
	out := []any{}
	for _, f := range m.Files {
		out = append(out, map[string]any{"id": f.ID, "filename": f.Name, "size": len(f.Data), "content_type": f.ContentType,
			"url": "https://cdn.discordapp.test/attachments/" + m.ChannelID + "/" + f.ID + "/" + f.Name})
	}
	return out
}
