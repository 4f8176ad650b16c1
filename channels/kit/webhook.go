package kit

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
)

// ErrBodyTooLarge is what ReadBody returns for a body longer than its limit, announced so by
// Content-Length or found so while reading.
var ErrBodyTooLarge = errors.New("request body over the limit")

// ErrBodyTimeout is what ReadBody returns for a body that did not arrive before the
// connection's read deadline (the server's ReadTimeout, or a deadline the listener set for the
// request): a client too slow to be waited for.
var ErrBodyTimeout = errors.New("request body did not arrive in time")

// ReadBody reads a webhook request's body for its signature check, which needs all of it, while
// nobody is authenticated yet: at most limit bytes, and none at all when Content-Length
// announces more. It fails with an error wrapping ErrBodyTooLarge (announced or read past
// limit), ErrBodyTimeout (the read deadline passed first) or the read's own error (the client
// went away); answer those with RefuseBody. The read deadline is the caller's to set (the
// listener knows what it waits for a body; a platform's handler does not), so a handler mounted
// without one waits as long as its server does.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, fmt.Errorf("%w: %d bytes announced, at most %d read", ErrBodyTooLarge, r.ContentLength, limit)
	}
	// MaxBytesReader, not a LimitReader: past limit it also tells the server to close the
	// connection instead of reading the rest of the body to reuse it.
	body, n, err := readChunked(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return body, nil
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, fmt.Errorf("%w: %d bytes read before the deadline", ErrBodyTimeout, n)
	default:
		return nil, fmt.Errorf("reading the request body: %w", err)
	}
}

// bodyChunkSize is the unit ReadBody reads a body in.
const bodyChunkSize = 32 << 10

// bodyChunks are the chunks bodies are read into, used again from one body to the next.
var bodyChunks = sync.Pool{New: func() any { c := make([]byte, bodyChunkSize); return &c }}

// readChunked reads r to its end into pooled chunks and returns it in one slice of its size,
// or, when the read fails, nothing and how many bytes had come. A body given up on (too slow,
// too large: an attacker's, most likely) thus leaves its chunks to the next body rather than
// garbage, and holds no more memory than it sent; io.ReadAll would have grown (and, failing,
// copied) a slice of its own.
func readChunked(r io.Reader) ([]byte, int, error) {
	var chunks []*[]byte
	defer func() {
		for _, c := range chunks {
			bodyChunks.Put(c)
		}
	}()
	total, fill := 0, bodyChunkSize
	for {
		if fill == bodyChunkSize {
			chunks = append(chunks, bodyChunks.Get().(*[]byte))
			fill = 0
		}
		n, err := r.Read((*chunks[len(chunks)-1])[fill:])
		fill += n
		total += n
		if errors.Is(err, io.EOF) {
			body := make([]byte, 0, total)
			for i, c := range chunks {
				if i == len(chunks)-1 {
					return append(body, (*c)[:fill]...), total, nil
				}
				body = append(body, *c...)
			}
		}
		if err != nil {
			return nil, total, err
		}
	}
}

// RefuseBody answers a request whose body ReadBody refused with err: 413 for ErrBodyTooLarge,
// 408 for ErrBodyTimeout, 400 otherwise. The connection is closed after the answer, so what is
// left of the body is never read (a client announcing a gigabyte keeps nothing waiting).
func RefuseBody(w http.ResponseWriter, err error) {
	w.Header().Set("Connection", "close")
	switch {
	case errors.Is(err, ErrBodyTooLarge):
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
	case errors.Is(err, ErrBodyTimeout):
		http.Error(w, "request body too slow", http.StatusRequestTimeout)
	default:
		http.Error(w, "unreadable request body", http.StatusBadRequest)
	}
}
