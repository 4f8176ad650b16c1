package conformance

import (
	"testing"
)

// FuzzParseBody proves the body parser, and the checker behind it, never panic on arbitrary
// JSON, form or multipart bodies.
func FuzzParseBody(f *testing.F) {
	f.Add("application/json", []byte(`{"channel":"C1","blocks":[{"type":"section","text":{"type":"mrkdwn","text":"x"}}]}`))
	f.Add("application/json", []byte(`[{"name":"ask","options":[{"type":1,"options":[{"type":3}]}]}]`))
	f.Add("application/json", []byte(`{"components":[{"type":17,"components":[{"type":9,"accessory":{"type":2}}]}],"flags":32768}`))
	f.Add("application/x-www-form-urlencoded", []byte("chat_id=5&text=%3Cb%3Ex&reply_markup=%7B%22inline_keyboard%22%3A%5B%5B1%5D%5D%7D"))
	f.Add("application/x-www-form-urlencoded", []byte("%zz&&=="))
	f.Add("multipart/form-data; boundary=b", []byte("--b\r\nContent-Disposition: form-data; name=\"payload_json\"\r\n\r\n{\"content\":1}\r\n--b--\r\n"))
	f.Add("", []byte("null"))
	f.Add("text/plain; charset", []byte("&amp;#x1F600;"))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		v, err := ParseBody(contentType, body)
		for p, tab := range tables {
			for m := range tab {
				vs := Check(p, m, contentType, body)
				if err != nil && (len(vs) != 1 || vs[0].Rule != RuleBody) {
					t.Fatalf("%s %s: unreadable body (%v) reported as %v", p, m, err, vs)
				}
				if err == nil {
					_ = CheckValue(p, m, v)
				}
			}
		}
	})
}
