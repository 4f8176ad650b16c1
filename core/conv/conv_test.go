package conv

import (
	"strings"
	"testing"
)

func TestKeyStringIsStableAndInjective(t *testing.T) {
	cases := []struct {
		k    Key
		want string
	}{
		{Key{Platform: "slack", Workspace: "T1", Chat: "C1", Thread: "171.2"}, "slack:T1:C1:171.2"},
		{Key{Platform: "telegram", Chat: "-100"}, "telegram::-100:"},
		{Key{Platform: "x", Chat: "a:b", Thread: "50%"}, "x::a%3Ab:50%25"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			if got := c.k.String(); got != c.want {
				t.Errorf("String() = %q, want %q", got, c.want)
			}
			if back, ok := ParseKey(c.k.String()); !ok || back != c.k {
				t.Errorf("ParseKey(String()) = %+v, %v", back, ok)
			}
			if tag := c.k.HashTag(); !strings.HasPrefix(tag, "{conv:") || len(tag) != len("{conv:}")+32 {
				t.Errorf("HashTag() = %q", tag)
			}
		})
	}
	if (Key{Platform: "a", Chat: "b:c"}).String() == (Key{Platform: "a", Chat: "b", Thread: "c"}).String() {
		t.Error("two different keys share a string")
	}
	for _, bad := range []string{"", "a:b:c", "a:b:c:d:e", "a:b:%zz:d", "a:b:%3:d", "a:b:c:%"} {
		if _, ok := ParseKey(bad); ok {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}
