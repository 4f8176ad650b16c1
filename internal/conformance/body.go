package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/url"
	"strings"
)

// FilePart is what ParseBody puts where a multipart body carries a file: the file's name, not
// its bytes (no rule looks at them).
type FilePart struct{ Filename string }

// payloadJSON is the multipart part whose JSON is the body of a Discord request with files
// (Reference: Uploading Files).
const payloadJSON = "payload_json"

// maxFormMemory bounds what a multipart body may hold in memory while it is parsed.
const maxFormMemory = 16 << 20

// ParseBody decodes a request body for checking. A JSON body (application/json) becomes what
// encoding/json makes of it, numbers kept as json.Number. A form (application/x-www-form-
// urlencoded) becomes an object of its first values, strings. A multipart form becomes an object
// of its values and, for file parts, FilePart; a payload_json part (Discord) is decoded and its
// members merged in. An empty body is an empty object. ParseBody never panics.
func ParseBody(contentType string, body []byte) (any, error) {
	ct, params, err := mime.ParseMediaType(contentType)
	if err != nil && contentType != "" {
		ct = strings.ToLower(strings.TrimSpace(strings.Split(contentType, ";")[0]))
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return map[string]any{}, nil
	}
	switch {
	case ct == "application/json" || (ct == "" && json.Valid(body)):
		return decodeJSON(body)
	case ct == "multipart/form-data":
		return parseMultipart(body, params["boundary"])
	default:
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("form body: %w", err)
		}
		out := make(map[string]any, len(vals))
		for k, v := range vals {
			out[k] = v[0]
		}
		return out, nil
	}
}

func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("JSON body: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("JSON body: data after the value")
	}
	return v, nil
}

func parseMultipart(body []byte, boundary string) (any, error) {
	if boundary == "" {
		return nil, errors.New("multipart body: no boundary")
	}
	// The parts are read one by one and a file's bytes skipped, not kept: no rule looks at them,
	// and a message's files may be 10 MiB.
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	out := map[string]any{}
	var payload []byte
	havePayload := false
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("multipart body: %w", err)
		}
		name := part.FormName()
		if part.FileName() != "" {
			if _, seen := out[name]; !seen {
				out[name] = FilePart{Filename: part.FileName()}
			}
			if _, err := io.Copy(io.Discard, part); err != nil {
				return nil, fmt.Errorf("multipart body: %w", err)
			}
			continue
		}
		v, err := io.ReadAll(io.LimitReader(part, maxFormMemory+1))
		if err != nil {
			return nil, fmt.Errorf("multipart body: %w", err)
		}
		if len(v) > maxFormMemory {
			return nil, fmt.Errorf("multipart body: %w", multipart.ErrMessageTooLarge)
		}
		switch {
		case name == payloadJSON:
			if !havePayload {
				payload, havePayload = v, true
			}
		default:
			if _, seen := out[name]; !seen {
				out[name] = string(v)
			}
		}
	}
	if havePayload {
		pj, err := decodeJSON(payload)
		if err != nil {
			return nil, fmt.Errorf("multipart body: %s: %w", payloadJSON, err)
		}
		obj, ok := pj.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("multipart body: %s is not an object", payloadJSON)
		}
		for k, v := range obj {
			out[k] = v
		}
	}
	return out, nil
}
