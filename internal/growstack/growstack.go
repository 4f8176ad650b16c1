// Package growstack grows the calling goroutine's stack ahead of deep work.
//
// A goroutine starts with a small stack (Go sizes it from the average stack in use, which the
// many idle goroutines keep at a few KB), and a collection halves the stack of each goroutine
// using under a quarter of it — every idle worker. The stack then grows again on the way down
// a deep call path (a run's lead chain, a model call, a platform send): each doubling copies the
// stack and adjusts every frame on it, and the deeper the path, the more frames. Under load that
// was near a tenth of the bot's CPU. Growing once at the top of the path, where the stack holds a
// few frames, costs one copy of those few.
package growstack

// Size is how much stack Grow makes room for: enough for the deepest paths measured (a worker's
// run down to a platform's HTTP send) without a second growth.
const Size = 16 << 10

// Grow makes sure the calling goroutine's stack has at least Size bytes free below the caller's
// frame. When it has, Grow costs the zeroing of its frame; when not, the stack is grown once,
// here.
//
//go:noinline
func Grow() {
	var pad [Size]byte
	use(pad[:])
}

// use keeps pad alive so the compiler cannot drop it (and with it the stack check).
//
//go:noinline
func use([]byte) {}
