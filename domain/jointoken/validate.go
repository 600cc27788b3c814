package jointoken

import (
	"strconv"
)

// MaxReasonLength bounds free-text reasons.
const MaxReasonLength = 1024

func quote(s string) string { return strconv.Quote(s) }
