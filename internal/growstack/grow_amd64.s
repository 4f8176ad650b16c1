#include "textflag.h"

// func Grow()
// A frame of Size (16 KB) that is never written: the prologue's stack check is the whole point.
TEXT ·Grow(SB), 0, $16384-0
	RET
