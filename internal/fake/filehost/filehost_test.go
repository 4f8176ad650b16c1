package filehost_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/fake/filehost"
)

// host serves f at its URL, each download failing with the oldest of faults pending.
type host struct {
	mu     sync.Mutex
	faults filehost.Faults
	url    string
}

func newHost(t *testing.T, f filehost.File) *host {
	t.Helper()
	h := &host{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		fault := h.faults.Take()
		h.mu.Unlock()
		filehost.Serve(w, f, fault)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

func (h *host) fail(n int, f filehost.Fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults.Fail(n, f)
}

// TestServe proves what one download answers, and that Status foretells its status: the bytes with their Content-Type and
// Content-Length, application/octet-stream when the file names no type, no Content-Length for
// an unsized file; a status fault's status with no body; and for a cut, the headers stating
// the whole length, then a connection a client sees end as an unexpected EOF.
func TestServe(t *testing.T) {
	pdf := filehost.File{Data: []byte("%PDF-1.7 0123"), ContentType: "application/pdf"}
	for _, tc := range []struct {
		name  string
		file  filehost.File
		fault *filehost.Fault
		want  filehost.Got
		eof   bool // the body ends in io.ErrUnexpectedEOF
	}{
		{name: "the bytes", file: pdf,
			want: filehost.Got{Status: 200, ContentType: "application/pdf", Length: 13, Body: "%PDF-1.7 0123"}},
		{name: "no content type", file: filehost.File{Data: []byte("raw")},
			want: filehost.Got{Status: 200, ContentType: "application/octet-stream", Length: 3, Body: "raw"}},
		{name: "unsized", file: filehost.File{Data: []byte("chunked"), ContentType: "text/plain", Unsized: true},
			want: filehost.Got{Status: 200, ContentType: "text/plain", Length: -1, Body: "chunked"}},
		{name: "status fault", file: pdf, fault: &filehost.Fault{Status: http.StatusServiceUnavailable},
			want: filehost.Got{Status: 503, ContentType: "", Length: 0, Body: ""}},
		{name: "cut connection", file: pdf, fault: &filehost.Fault{Cut: true, Status: http.StatusNotFound},
			want: filehost.Got{Status: 200, ContentType: "application/pdf", Length: 13}, eof: true},
		{name: "cut of an empty file", file: filehost.File{}, fault: &filehost.Fault{Cut: true},
			want: filehost.Got{Status: 200, ContentType: "application/octet-stream", Length: 1}, eof: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, tc.file)
			if tc.fault != nil {
				h.fail(1, *tc.fault)
			}
			got := filehost.Get(t, h.url, "")
			if st := filehost.Status(tc.fault); st != got.Status {
				t.Errorf("Status says %d, Serve answered %d", st, got.Status)
			}
			if tc.eof != errors.Is(got.Err, io.ErrUnexpectedEOF) {
				t.Errorf("read error %v, want an unexpected EOF: %v", got.Err, tc.eof)
			}
			got.Err = nil
			if tc.eof {
				got.Body = ""
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestFaultsThenTheFile proves a file's pending faults fail its next downloads one each, in
// the order they were asked for, and that the download after them gets the bytes.
func TestFaultsThenTheFile(t *testing.T) {
	h := newHost(t, filehost.File{Data: []byte("0123456789"), ContentType: "text/plain"})
	h.fail(2, filehost.Fault{Status: http.StatusInternalServerError})
	h.fail(0, filehost.Fault{Status: http.StatusTeapot})
	h.fail(1, filehost.Fault{Cut: true})
	for i, want := range []int{500, 500, 0, 200, 200} {
		got := filehost.Get(t, h.url, "Bearer x")
		switch {
		case want == 0 && !errors.Is(got.Err, io.ErrUnexpectedEOF):
			t.Errorf("download %d: %+v, want a cut", i, got)
		case want != 0 && got.Status != want:
			t.Errorf("download %d: %d, want %d", i, got.Status, want)
		case want == 200 && (got.Body != "0123456789" || got.Err != nil):
			t.Errorf("download %d read %q, %v", i, got.Body, got.Err)
		}
	}
}

// TestTakeWithNothingPending proves an empty queue, the zero value included, gives no fault.
func TestTakeWithNothingPending(t *testing.T) {
	var q filehost.Faults
	if f := q.Take(); f != nil {
		t.Fatalf("the zero Faults gave %+v", f)
	}
	q.Fail(1, filehost.Fault{Status: 502})
	if f := q.Take(); f == nil || *f != (filehost.Fault{Status: 502}) {
		t.Fatalf("took %+v", f)
	}
	if f := q.Take(); f != nil {
		t.Fatalf("an emptied Faults gave %+v", f)
	}
}
