package threads

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"
)

// crockford is the ULID alphabet (Crockford's base32: no I, L, O, U).
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// idGen makes ULID-shaped ids: 26 characters, a 48-bit millisecond timestamp then 80 random bits.
// Ids from one generator sort in creation order even within one millisecond (the random part is
// incremented, as the ULID spec's monotonic mode does); ids from different processes sort by
// millisecond. The random part comes from crypto/rand, so ids are unique across processes.
type idGen struct {
	mu     sync.Mutex
	lastMs uint64
	rnd    [10]byte
}

func (g *idGen) next(now time.Time) string {
	ms := uint64(now.UnixMilli())
	g.mu.Lock()
	defer g.mu.Unlock()
	if ms <= g.lastMs {
		// Same millisecond (or the clock went back): keep the last timestamp and count up, so
		// the new id still sorts after the previous one.
		ms = g.lastMs
		if incr(g.rnd[:]) {
			ms++
			rand.Read(g.rnd[:])
		}
	} else {
		rand.Read(g.rnd[:])
	}
	g.lastMs = ms
	var b [16]byte
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	copy(b[6:], g.rnd[:])
	return encodeULID(b)
}

// incr adds one to a big-endian number and reports whether it overflowed.
func incr(b []byte) bool {
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			return false
		}
	}
	return true
}

// encodeULID writes 128 bits as 26 Crockford characters, most significant first; the first
// character carries only 3 bits, as in the ULID spec.
func encodeULID(b [16]byte) string {
	var out [26]byte
	for i := range out {
		v := 0
		for j := 0; j < 5; j++ {
			bit := i*5 + j - 2
			v <<= 1
			if bit >= 0 && b[bit/8]&(0x80>>(bit%8)) != 0 {
				v |= 1
			}
		}
		out[i] = crockford[v]
	}
	return string(out[:])
}
