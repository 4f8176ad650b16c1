package discord

import (
	"fmt"
	"strconv"
)

// permAdministrator is Discord's ADMINISTRATOR bit: it grants every permission.
const permAdministrator = 1 << 3

// maxPermissionDigits bounds a permissions string: 2^64-1 has 20 digits.
const maxPermissionDigits = 20

// parsePermissions reads a permissions bitfield as Discord serializes it: an unsigned decimal
// integer in a string ("1071698660929"). It fails on an empty string, a sign, anything but
// digits, and a value past 64 bits.
func parsePermissions(s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty permissions", errMalformed)
	}
	if len(s) > maxPermissionDigits {
		return 0, fmt.Errorf("%w: permissions of %d digits", errMalformed, len(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: permissions are not an unsigned number", errMalformed)
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: permissions past 64 bits", errMalformed)
	}
	return v, nil
}

// holds reports whether a member with permissions perms holds permission want: Discord's
// ADMINISTRATOR holds every permission.
func holds(perms, want uint64) bool {
	return want != 0 && (perms&want == want || perms&permAdministrator != 0)
}
