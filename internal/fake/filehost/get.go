package filehost

import (
	"io"
	"net/http"
	"testing"
)

// Got is what a client received for one GET of a file.
type Got struct {
	Status      int
	ContentType string
	// Length is the stated Content-Length, -1 when none was stated.
	Length int64
	// Body is the body read, or "read error: " and Err's text when reading it failed.
	Body string
	// Err is the error reading the body failed with (io.ErrUnexpectedEOF for a cut
	// connection), nil when the whole body arrived.
	Err error
}

// Get GETs url with the Authorization header auth ("" sends none) and returns what came
// back; it fails t when no answer came at all.
func Get(t testing.TB, url, auth string) Got {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	g := Got{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Length: resp.ContentLength}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		g.Body, g.Err = "read error: "+err.Error(), err
		return g
	}
	g.Body = string(b)
	return g
}
