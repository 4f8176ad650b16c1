//go:build !amd64 && !arm64

package growstack

// Grow makes sure the calling goroutine's stack has at least Size bytes free below the caller's
// frame. Where there is no assembly version, its frame is a Size-byte array, zeroed each call.
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
