package kit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestWebhookReadBody proves what ReadBody reads and refuses, and how RefuseBody answers each
// refusal: a body within the limit is read whole; one announced past it is refused without a
// read; one found past it while reading (no Content-Length) is refused; a read past the
// connection's deadline is too slow; any other failed read is unreadable. Every refusal closes
// the connection.
func TestWebhookReadBody(t *testing.T) {
	const limit = 64
	unread := errors.New("the body was read")
	deadline := fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded)
	tests := []struct {
		name    string
		body    io.Reader
		length  int64 // Content-Length; -1: unknown (chunked)
		want    string
		wantErr error
		status  int
	}{
		{name: "within the limit", body: strings.NewReader("hello"), length: 5, want: "hello"},
		{name: "exactly the limit", body: strings.NewReader(strings.Repeat("a", limit)), length: limit, want: strings.Repeat("a", limit)},
		// Its body fails any read: a read would make it unreadable (400), not too large.
		{name: "announced past the limit is not read", body: iotest.ErrReader(unread), length: 1 << 30, wantErr: ErrBodyTooLarge, status: http.StatusRequestEntityTooLarge},
		{name: "found past the limit while reading", body: strings.NewReader(strings.Repeat("a", limit+1)), length: -1, wantErr: ErrBodyTooLarge, status: http.StatusRequestEntityTooLarge},
		{name: "past the read deadline", body: io.MultiReader(strings.NewReader("{"), iotest.ErrReader(deadline)), length: 10, wantErr: ErrBodyTimeout, status: http.StatusRequestTimeout},
		{name: "the client went away", body: io.MultiReader(strings.NewReader("{"), iotest.ErrReader(io.ErrUnexpectedEOF)), length: 10, wantErr: io.ErrUnexpectedEOF, status: http.StatusBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/hook", nil)
			r.Body, r.ContentLength = io.NopCloser(tc.body), tc.length
			w := httptest.NewRecorder()
			got, err := ReadBody(w, r, limit)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err == nil {
				if string(got) != tc.want {
					t.Fatalf("read %q, want %q", got, tc.want)
				}
				return
			}
			RefuseBody(w, err)
			if w.Code != tc.status || w.Header().Get("Connection") != "close" {
				t.Fatalf("answered %d (Connection: %q), want %d and close", w.Code, w.Header().Get("Connection"), tc.status)
			}
		})
	}
}

// TestWebhookReadBodyWhole: bodies of every size around the chunks ReadBody reads in come back
// whole and exact, however the reads are split.
func TestWebhookReadBodyWhole(t *testing.T) {
	for _, size := range []int{0, 1, bodyChunkSize - 1, bodyChunkSize, bodyChunkSize + 1, 3*bodyChunkSize + 7} {
		for name, wrap := range map[string]func(io.Reader) io.Reader{"whole reads": func(r io.Reader) io.Reader { return r },
			"half reads": iotest.HalfReader, "data with EOF": iotest.DataErrReader} {
			t.Run(fmt.Sprintf("%d bytes, %s", size, name), func(t *testing.T) {
				want := make([]byte, size)
				for i := range want {
					want[i] = byte('a' + i%26)
				}
				r := httptest.NewRequest(http.MethodPost, "/hook", nil)
				r.Body, r.ContentLength = io.NopCloser(wrap(bytes.NewReader(want))), int64(size)
				got, err := ReadBody(httptest.NewRecorder(), r, int64(size))
				if err != nil || !bytes.Equal(got, want) || cap(got) != size {
					t.Fatalf("read %d bytes (cap %d), %v; want the %d bytes", len(got), cap(got), err, size)
				}
			})
		}
	}
}

// TestWebhookReadBodyOverAConnection proves, over a real connection, that a body stalled past
// the read deadline the server set is refused as too slow (408) and the connection closed, and
// that a gigabyte announced is refused at once (413) with the connection closed and nothing
// waited for.
func TestWebhookReadBodyOverAConnection(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := ReadBody(w, r, 1<<20); err != nil {
			RefuseBody(w, err)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		length int
		status int
	}{
		{"stalled body", 1000, http.StatusRequestTimeout},
		{"a gigabyte announced", 1 << 30, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second)) // the test's bound, not a synchronization
			start := time.Now()
			fmt.Fprintf(conn, "POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n{\"a\":", tc.length)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("answered %d, want %d", resp.StatusCode, tc.status)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Fatalf("connection left open after the refusal (read: %v)", err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("refused after %s", took)
			}
		})
	}
}
