package jsonwire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// probe is what readProbe reads with a Reader, the way a decoder built on it would.
type probe struct {
	S   string          `json:"s"`
	N   int             `json:"n"`
	B   bool            `json:"b"`
	Raw json.RawMessage `json:"raw"`
	Sub *struct {
		X string `json:"x"`
	} `json:"sub"`
}

// probeKeys: raw (bit 3) is a json.RawMessage.
var probeKeys, subKeys = Keys{Names: []string{"s", "n", "b", "raw", "sub"}, Raw: 1 << 3}, Keys{Names: []string{"x"}}

func readProbe(b []byte) (p probe, ok bool) {
	r := NewReader(b)
	r.Object(&probeKeys, func(k int) {
		switch k {
		case 0:
			p.S = r.Str()
		case 1:
			p.N = r.Int()
		case 2:
			p.B = r.Bool()
		case 3:
			p.Raw = append(json.RawMessage(nil), r.Raw()...)
		case 4:
			p.Sub = &struct {
				X string `json:"x"`
			}{}
			r.Object(&subKeys, func(int) { p.Sub.X = r.Str() })
		}
	})
	return p, r.End()
}

func TestReaderReadsWhatEncodingJSONReads(t *testing.T) {
	for _, body := range []string{
		`{}`,
		` { "s" : "a\"\u00e9" , "n" : -12 , "b" : true , "raw" : {"a": [1, null]} , "sub" : { "x" : "y" } } `,
		`{"unknown":[{"deep":true}],"s":"v"}`,
		`{"\u0073":"escaped key"}`,
		`{"s":null,"n":null,"b":null,"sub":null}`,
	} {
		got, ok := readProbe([]byte(body))
		if !ok {
			t.Errorf("the Reader gave up on %s", body)
			continue
		}
		var want probe
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Reader %+v, encoding/json %+v", body, got, want)
		}
	}
}

func TestReaderGivesUp(t *testing.T) {
	for _, tt := range []struct{ name, body string }{
		{"empty", ``},
		{"not an object", `"s"`},
		{"trailing data", `{} x`},
		{"missing colon", `{"s" "a"}`},
		{"missing comma", `{"s":"a" "n":1}`},
		{"trailing comma", `{"s":"a",}`},
		{"unclosed array", `{"raw":["a"}`},
		{"key in another case", `{"S":"a"}`},
		{"key folding to a known one", "{\"\u017f\":\"long s\"}"},
		{"key twice", `{"n":1,"n":2}`},
		{"null for a raw value", `{"raw":null}`},
		{"null run on", `{"s":nullx}`},
		{"wrong type", `{"n":"1"}`},
		{"fraction for an int", `{"n":1.5}`},
		{"bad unknown value", `{"zzz":[1 2]}`},
		{"too deep", `{"raw":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if p, ok := readProbe([]byte(tt.body)); ok {
				t.Fatalf("the Reader read %+v; it should give up", p)
			}
		})
	}
}

// FuzzReader checks that whatever the Reader reads, encoding/json reads the same.
func FuzzReader(f *testing.F) {
	f.Add([]byte(`{"s":"a","n":1,"b":false,"raw":[{}],"sub":{"x":"y"}}`))
	f.Add([]byte(`{"K":"kelvin","s":"\ud800"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := readProbe(body)
		if !ok {
			return
		}
		var want probe
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("the Reader read %+v from what encoding/json refuses: %v", got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Reader %+v, encoding/json %+v", got, want)
		}
	})
}

func TestDecodeFallsBackToEncodingJSON(t *testing.T) {
	read := func(r *Reader, p *probe) {
		pk := probeKeys
		r.Object(&pk, func(k int) {
			if k == 0 {
				p.S = r.Str()
			} else {
				r.Skip()
			}
		})
	}
	for _, tt := range []struct {
		body, want string
		err        bool
	}{
		{`{"s":"fast"}`, "fast", false},
		{`{"S":"slow"}`, "slow", false}, // a key in another case: encoding/json's
		{`{"s":"a","s":"b"}`, "b", false},
		{`{"s":`, "", true},
	} {
		got, err := Decode([]byte(tt.body), read)
		if (err != nil) != tt.err || got.S != tt.want {
			t.Errorf("Decode(%s) = %+v, %v; want s %q, error %v", tt.body, got, err, tt.want, tt.err)
		}
	}
}
