//go:build !linux

package sal

import (
	"errors"
	"syscall"
)

// groupAlive reports whether any process of the group still exists.
func groupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}
