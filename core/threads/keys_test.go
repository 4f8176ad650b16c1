package threads

import (
	"strings"
	"testing"
	"time"
)

// hashTag returns the part of key Redis Cluster hashes: the text inside the first {…} pair
// when non-empty, else the whole key (the rule of the Cluster spec).
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// TestConversationKeysShareHashSlot proves every script's keys land in one Cluster slot, for
// any conversation key (braces included) and prefix, while different conversations spread.
func TestConversationKeysShareHashSlot(t *testing.T) {
	for _, prefix := range []string{"sb:", "tenant-a:", "x"} {
		for _, conv := range []string{"telegram/-/12345/7", "slack/T{1}/C/}{", "{", "", "discord/g/c/" + strings.Repeat("z", 500)} {
			ck := keyspace{prefix: prefix}.conv(conv)
			tag := hashTag(ck.thread)
			if !strings.HasPrefix(tag, "conv:") || hashTag(ck.log) != tag || hashTag(ck.clar) != tag {
				t.Errorf("prefix %q conv %q: keys %q %q %q do not share a conv hash tag", prefix, conv, ck.thread, ck.log, ck.clar)
			}
		}
	}
	a, b := keyspace{prefix: "sb:"}.conv("c/1"), keyspace{prefix: "sb:"}.conv("c/2")
	if hashTag(a.thread) == hashTag(b.thread) {
		t.Errorf("two conversations share the hash tag %q", hashTag(a.thread))
	}
}

func TestIDsSortAndAreUnique(t *testing.T) {
	var g idGen
	now := time.UnixMilli(1764504000000)
	prev := ""
	seen := map[string]bool{}
	for i := range 2000 {
		// Many ids per millisecond, and once the clock going back: still increasing.
		at := now.Add(time.Duration(i/100) * time.Millisecond)
		if i == 1000 {
			at = now
		}
		id := g.next(at)
		if len(id) != 26 || strings.Trim(id, crockford) != "" {
			t.Fatalf("id %q is not 26 Crockford characters", id)
		}
		if id <= prev || seen[id] {
			t.Fatalf("id %d %q does not sort after %q", i, id, prev)
		}
		prev, seen[id] = id, true
	}
	var other idGen
	if a, b := other.next(now), other.next(now.Add(time.Millisecond)); a[:10] == b[:10] {
		t.Errorf("ids a millisecond apart share the time part: %s %s", a, b)
	}
}

func TestEncodeULIDKnownValue(t *testing.T) {
	var b [16]byte
	for i := range b {
		b[i] = 0xff
	}
	if got := encodeULID(b); got != "7ZZZZZZZZZZZZZZZZZZZZZZZZZ" {
		t.Errorf("max ULID = %s", got)
	}
	if got := encodeULID([16]byte{}); got != "00000000000000000000000000" {
		t.Errorf("zero ULID = %s", got)
	}
	b = [16]byte{0x01, 0x8f}
	if got := encodeULID(b); got[:3] != "01H" {
		t.Errorf("ULID of 0x018f… = %s, want prefix 01H", got)
	}
}
