// Package filehost serves the bytes of the files users send, for the platform fakes
// (slackfake, discordfake, telegramfake): a file's download answered as a file server does,
// or failed as a test asks — with a status, or with the connection cut mid-body. Each fake
// keeps its own URLs, authentication and error pages; what they share is here.
package filehost

import (
	"net/http"
	"strconv"
)

// File is what a download of one file serves.
type File struct {
	Data []byte
	// ContentType is the Content-Type the bytes are served with; "" serves
	// application/octet-stream.
	ContentType string
	// Unsized serves the bytes without a Content-Length (chunked).
	Unsized bool
}

// Status is the status Serve answers with fault: fault.Status for a status fault, 200 for a
// cut (sent before the connection drops) or no fault. A fake that logs a download before
// answering it, so that a client which sees the connection cut finds its download logged,
// takes the status from here.
func Status(fault *Fault) int {
	if fault != nil && !fault.Cut {
		return fault.Status
	}
	return http.StatusOK
}

// Serve answers a download of f and returns the status it answered, Status(fault). With a status fault it
// answers fault.Status with no body (a fake whose platform sends an error page answers a
// status fault itself and hands Serve only cuts); with a cut it sends the headers, stating
// the whole Content-Length (at least 1), and the first half of the bytes, then closes the
// connection, so that a client reading the body sees io.ErrUnexpectedEOF. w must be an
// http.Hijacker for a cut and an http.Flusher for an unsized file, as net/http's HTTP/1.x
// server's is.
func Serve(w http.ResponseWriter, f File, fault *Fault) int {
	if fault != nil && !fault.Cut {
		w.WriteHeader(fault.Status)
		return fault.Status
	}
	contentType := f.ContentType
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	if fault != nil {
		cut(w, f.Data, contentType)
		return http.StatusOK
	}
	w.Header().Set("Content-Type", contentType)
	if f.Unsized {
		// Flushing before the first byte makes the answer chunked: no Content-Length.
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
	} else {
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
	}
	_, _ = w.Write(f.Data)
	return http.StatusOK
}

// cut writes a 200 answer by hand on the hijacked connection — net/http would not let a
// handler send fewer bytes than its Content-Length — and drops the connection half way.
func cut(w http.ResponseWriter, data []byte, contentType string) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: " + contentType + "\r\nContent-Length: " + strconv.Itoa(max(len(data), 1)) + "\r\n\r\n")
	_, _ = buf.Write(data[:len(data)/2])
	_ = buf.Flush()
}
