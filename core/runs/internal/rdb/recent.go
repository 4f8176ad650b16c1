package rdb

import (
	"fmt"
	"strconv"
	"strings"
)

// The recent hash (<prefix>{global}:recent) holds the counters of the last hour minute by minute:
// field "<unix minute>:<counter>" → count, written by the settle and dead scripts in the calls
// that add to the totals (no extra round trip), on Redis's clock (see luaRecent in scripts.go),
// plus field "m", the minute of the newest write. It keeps the current minute and the 60 before
// it, the oldest needed to prorate an hour's window (Window).

// RecentMinutes is how many whole minutes before the current one the recent hash keeps.
const RecentMinutes = 60

const minuteMs = 60_000

// Recent is the recent hash as read at Now.
type Recent struct {
	// Now is when it was read (ms), on the clock its buckets were written with.
	Now int64
	// Minutes maps a unix minute to its counters.
	Minutes map[int64]map[string]int64
}

// parseRecent reads the recent script's reply: now, then field/value pairs. Fields it does not
// know (the "m" marker, anything malformed) are skipped.
func parseRecent(v []any) (Recent, error) {
	if len(v) == 0 {
		return Recent{}, fmt.Errorf("rdb: read recent counters: empty reply")
	}
	now, ok := v[0].(int64)
	if !ok {
		return Recent{}, fmt.Errorf("rdb: read recent counters: time %v is not an integer", v[0])
	}
	r := Recent{Now: now, Minutes: map[int64]map[string]int64{}}
	for i := 1; i+1 < len(v); i += 2 {
		f, _ := v[i].(string)
		val, _ := v[i+1].(string)
		ms, name, ok := strings.Cut(f, ":")
		if !ok || name == "" {
			continue
		}
		m, err1 := strconv.ParseInt(ms, 10, 64)
		n, err2 := strconv.ParseInt(val, 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if r.Minutes[m] == nil {
			r.Minutes[m] = map[string]int64{}
		}
		r.Minutes[m][name] += n
	}
	return r, nil
}

// Window estimates each counter over the n minutes up to Now (1 ≤ n ≤ RecentMinutes): the
// current minute so far, the n−1 whole minutes before it, and the share of the minute before
// those that still lies inside the window — its count times the part of it inside, rounded to
// the nearest, as if its runs were spread evenly over it. So at a minute's first millisecond the
// window is exactly its n whole predecessors, and a minute leaves the window gradually, not all
// at once. Buckets after Now's minute (a clock stepped back) are not counted.
func (r Recent) Window(n int) map[string]int64 {
	n = min(max(n, 1), RecentMinutes)
	cur := floorDiv(r.Now, minuteMs)
	inside := minuteMs - (r.Now - cur*minuteMs) // ms of the oldest minute still in the window
	out := map[string]int64{}
	for k := range n {
		for name, c := range r.Minutes[cur-int64(k)] {
			out[name] += c
		}
	}
	for name, c := range r.Minutes[cur-int64(n)] {
		out[name] += prorate(c, inside)
	}
	return out
}

// prorate is c·part/minuteMs rounded to the nearest (halves up), without overflowing for any
// c ≥ 0 and 0 ≤ part ≤ minuteMs.
func prorate(c, part int64) int64 {
	q, r := c/minuteMs, c%minuteMs
	return q*part + (r*part+minuteMs/2)/minuteMs
}

// floorDiv is a/b rounded down (b > 0), also for times before 1970.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
