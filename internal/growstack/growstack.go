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
// run down to a platform's HTTP send) without a second growth. The assembly versions spell it
// out as their frame size.
const Size = 16 << 10
