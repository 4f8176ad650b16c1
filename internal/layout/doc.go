// Package layout holds the checks of the code's shape that no single package can make of
// itself: the bounds that keep a type, a function and a file small enough to read whole (issue
// 17's redesign). It has no code of its own.
package layout
