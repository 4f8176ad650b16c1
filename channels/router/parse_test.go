package router

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseCommand(t *testing.T) {
	cases := []struct {
		in   string
		name string
		args []string
		ok   bool
	}{
		{"/help", "help", nil, true},
		{"  /HELP  ", "help", nil, true},
		{"/new@switchboard_bot", "new", nil, true},
		{"/model deepseek-chat", "model", []string{"deepseek-chat"}, true},
		{"/deadletters   replay\t01ABC", "deadletters", []string{"replay", "01ABC"}, true},
		{"/allow\nu1", "allow", []string{"u1"}, true},
		{"/a " + strings.Repeat("w ", 20), "a", append(make([]string, 0), "w", "w", "w", "w", "w", "w", "w", "w", "w", "w", "w", "w", "w", "w", "w", "w w w w w"), true},
		// Not commands.
		{"", "", nil, false},
		{"help", "", nil, false},
		{"/", "", nil, false},
		{"/ help", "", nil, false},
		{"/usr/bin is a path", "", nil, false},
		{"/héllo", "", nil, false},
		{"/" + strings.Repeat("x", 33), "", nil, false},
		{"/@bot", "", nil, false},
		{"/help\xff", "", nil, false},
		{"!help", "", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			name, args, ok := ParseCommand(tc.in)
			if name != tc.name || ok != tc.ok || !reflect.DeepEqual(args, tc.args) {
				t.Errorf("ParseCommand(%q) = %q, %q, %v; want %q, %q, %v", tc.in, name, args, ok, tc.name, tc.args, tc.ok)
			}
		})
	}
}

func TestParseAnswer(t *testing.T) {
	cases := []struct {
		in    string
		n     int
		multi bool
		want  []int
		ok    bool
	}{
		{"1", 3, false, []int{0}, true},
		{" 3. ", 3, false, []int{2}, true},
		{"1,3", 3, true, []int{0, 2}, true},
		{"3, 1 ; 3", 3, true, []int{2, 0}, true},
		{"2 3", 5, true, []int{1, 2}, true},
		// Malformed.
		{"", 3, false, nil, false},
		{"0", 3, false, nil, false},
		{"4", 3, false, nil, false},
		{"-1", 3, false, nil, false},
		{"1,2", 3, false, nil, false},
		{"one", 3, false, nil, false},
		{"1a", 3, false, nil, false},
		{"1,,", 3, true, []int{0}, true},
		{",", 3, true, nil, false},
		{"0001", 3, false, nil, false},
		{"99999999999999999999", 3, false, nil, false},
		{"1", 0, false, nil, false},
		{strings.Repeat("1,", 101), 3, true, nil, false},
		{"１", 3, false, nil, false}, // full-width digit
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseAnswer(tc.in, tc.n, tc.multi)
			if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseAnswer(%q, %d, %v) = %v, %v; want %v, %v", tc.in, tc.n, tc.multi, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"/help", "/model x y", "/new@bot", "/ ", "/usr/bin", "/a\tb\nc", "/héllo", "/" + strings.Repeat("a b ", 30)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, args, ok := ParseCommand(s)
		if !ok {
			if name != "" || args != nil {
				t.Fatalf("not a command but name %q args %q", name, args)
			}
			return
		}
		if name == "" || len(name) > maxCommandName || strings.ToLower(name) != name || strings.ContainsAny(name, "@/ ") {
			t.Fatalf("bad name %q", name)
		}
		if len(args) > maxCommandArgs {
			t.Fatalf("%d args", len(args))
		}
		for _, a := range args {
			if a == "" || !utf8.ValidString(a) {
				t.Fatalf("bad arg %q", a)
			}
		}
	})
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{"1", "1,3", " 2 ", "0", "x", "1,,2", "3;1 2", "99"} {
		f.Add(s, 3, true)
		f.Add(s, 25, false)
	}
	f.Fuzz(func(t *testing.T, s string, n int, multi bool) {
		opts, ok := ParseAnswer(s, n, multi)
		if !ok {
			if opts != nil {
				t.Fatalf("refused but returned %v", opts)
			}
			return
		}
		if len(opts) == 0 || (!multi && len(opts) != 1) {
			t.Fatalf("%v for multi=%v", opts, multi)
		}
		seen := map[int]bool{}
		for _, o := range opts {
			if o < 0 || o >= n || seen[o] {
				t.Fatalf("option %d out of range or repeated (n=%d): %v", o, n, opts)
			}
			seen[o] = true
		}
	})
}
