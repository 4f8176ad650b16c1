package llm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/fake/modelserver"
)

// TestModelErrorsTellWhetherTheyMayPass drives the real client against the fake server and
// checks that every kind of failure is classified: outages (5xx, 429, a hang past the timeout,
// a refused connection, a stream cut mid-answer) are Temporary, with their sentinel; refusals
// (401, 404, 400) are not.
func TestModelErrorsTellWhetherTheyMayPass(t *testing.T) {
	refused := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return "http://" + ln.Addr().String() + "/v1"
	}
	cases := []struct {
		name      string
		reply     modelserver.Reply
		baseURL   bool // point the client at a port nothing listens on
		temporary bool
		sentinel  error
	}{
		{name: "500", reply: modelserver.ServerError(), temporary: true},
		{name: "503", reply: modelserver.Reply{Status: http.StatusServiceUnavailable}, temporary: true},
		{name: "429", reply: modelserver.RateLimited(""), temporary: true},
		{name: "hang past the timeout", reply: modelserver.Hang(), temporary: true, sentinel: ErrTimeout},
		{name: "stream cut mid-answer", reply: modelserver.Reply{Content: "half an answer, then nothing", ChunkSize: 4, DropMidStream: true}, temporary: true, sentinel: ErrStreamCut},
		{name: "connection refused", baseURL: true, temporary: true, sentinel: ErrUnavailable},
		{name: "401", reply: modelserver.Unauthorized(), sentinel: ErrAuth},
		{name: "404", reply: modelserver.NotFound(), sentinel: ErrNotFound},
		{name: "400", reply: modelserver.Reply{Status: http.StatusBadRequest}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, p := newFake(t, func(o *OpenAIOptions) {
				o.Timeout = 300 * time.Millisecond
				o.MaxRetries = -1
				if tc.baseURL {
					o.BaseURL, o.HTTPClient = refused(), nil
				}
			})
			s.SetFunc(func(modelserver.Request) modelserver.Reply { return tc.reply })
			_, err := p.Stream(context.Background(), userRequest("hi"), nil)
			if err == nil {
				t.Fatal("the call succeeded")
			}
			if got := Temporary(err); got != tc.temporary {
				t.Errorf("Temporary(%v) = %v, want %v", err, got, tc.temporary)
			}
			if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
				t.Errorf("err = %v, want it to be %v", err, tc.sentinel)
			}
		})
	}
	if Temporary(nil) || Temporary(context.Canceled) || Temporary(errors.New("anything else")) {
		t.Error("nil, a cancel or an unknown error counted as temporary")
	}
}
