package main

import (
	"slices"
	"strings"
	"testing"
)

func TestKeepStacksEnv(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      []string
		want    []string
		changed bool
	}{
		{"no GODEBUG", []string{"PATH=/bin"}, []string{"PATH=/bin", "GODEBUG=gcshrinkstackoff=1"}, true},
		{"empty environment", nil, []string{"GODEBUG=gcshrinkstackoff=1"}, true},
		{"other settings kept", []string{"GODEBUG=http2client=0", "HOME=/h"}, []string{"GODEBUG=http2client=0,gcshrinkstackoff=1", "HOME=/h"}, true},
		{"empty GODEBUG", []string{"GODEBUG="}, []string{"GODEBUG=gcshrinkstackoff=1"}, true},
		{"the operator keeps shrinking", []string{"GODEBUG=gcshrinkstackoff=0"}, []string{"GODEBUG=gcshrinkstackoff=0"}, false},
		{"already off", []string{"GODEBUG=madvdontneed=1,gcshrinkstackoff=1"}, []string{"GODEBUG=madvdontneed=1,gcshrinkstackoff=1"}, false},
		{"named with spaces", []string{"GODEBUG= gcshrinkstackoff =0"}, []string{"GODEBUG= gcshrinkstackoff =0"}, false},
		{"a similar name is another setting", []string{"GODEBUG=gcshrinkstackoffx=1"}, []string{"GODEBUG=gcshrinkstackoffx=1,gcshrinkstackoff=1"}, true},
		{"GODEBUGX is another variable", []string{"GODEBUGX=1"}, []string{"GODEBUGX=1", "GODEBUG=gcshrinkstackoff=1"}, true},
		{"the first GODEBUG counts", []string{"GODEBUG=a=1", "GODEBUG=b=2"}, []string{"GODEBUG=a=1,gcshrinkstackoff=1", "GODEBUG=b=2"}, true},
		{"only the first GODEBUG counts", []string{"GODEBUG=a=1", "GODEBUG=gcshrinkstackoff=0"}, []string{"GODEBUG=a=1,gcshrinkstackoff=1", "GODEBUG=gcshrinkstackoff=0"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := slices.Clone(c.in)
			got, changed := keepStacksEnv(in)
			if changed != c.changed || !slices.Equal(got, c.want) {
				t.Fatalf("keepStacksEnv(%q) = %q, %v; want %q, %v", c.in, got, changed, c.want, c.changed)
			}
			if !slices.Equal(in, c.in) {
				t.Fatalf("keepStacksEnv changed its input: %q", in)
			}
		})
	}
}

func FuzzKeepStacksEnv(f *testing.F) {
	f.Add("GODEBUG=http2client=0\x00PATH=/bin")
	f.Add("GODEBUG=gcshrinkstackoff=0")
	f.Add("")
	f.Fuzz(func(t *testing.T, joined string) {
		in := strings.Split(joined, "\x00")
		got, changed := keepStacksEnv(in)
		if !changed {
			if !slices.Equal(got, in) {
				t.Fatalf("unchanged but %q → %q", in, got)
			}
			return
		}
		if len(got) < len(in) || len(got) > len(in)+1 {
			t.Fatalf("%q → %q", in, got)
		}
		for _, kv := range got {
			if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
				if !strings.HasSuffix(v, stackShrinkSetting) {
					t.Fatalf("%q → %q: the first GODEBUG does not end with %s", in, got, stackShrinkSetting)
				}
				return
			}
		}
		t.Fatalf("%q → %q: no GODEBUG", in, got)
	})
}
