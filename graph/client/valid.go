package client

import (
	"encoding/binary"
	"math/bits"
)

// validJSON reports whether b is one JSON value and nothing more but
// white space, as json.Valid does. A subscriber of a busy log checks every
// result it is sent; json.Valid, a state machine that makes a call for
// each byte, took a sixth of such a client's time, and this plain scan a
// fraction of that.
func validJSON(b []byte) bool {
	var within [32]byte // the containers open, '{' or '[', innermost last
	open := within[:0]
	i := space(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			i = space(b, i+1)
			if i < len(b) && b[i] == closing(c) {
				i++
				break
			}
			open = append(open, c)
			if c == '{' {
				if i = member(b, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			i = str(b, i)
		case c == 't':
			i = word(b, i, "true")
		case c == 'f':
			i = word(b, i, "false")
		case c == 'n':
			i = word(b, i, "null")
		default:
			i = number(b, i)
		}
		if i < 0 {
			return false
		}
		// A value ended before i: close what it ends, then go on to the
		// next value, or stop at the end of the outermost.
		for {
			i = space(b, i)
			if len(open) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			inner := open[len(open)-1]
			if b[i] == ',' {
				i = space(b, i+1)
				if inner == '{' {
					if i = member(b, i); i < 0 {
						return false
					}
				}
				break
			}
			if b[i] == closing(inner) {
				open = open[:len(open)-1]
				i++
				continue
			}
			return false
		}
	}
}

// closing is the byte that closes the container c opens ('}' or ']', two
// after '{' and '[' in ASCII).
func closing(c byte) byte { return c + 2 }

// member reads an object member's name and colon at i and returns where
// its value starts, or -1.
func member(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = str(b, i); i < 0 {
		return -1
	}
	if i = space(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return space(b, i+1)
}

func space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// plain marks the bytes a string holds as they are: all but its quote,
// the escape and control characters.
var plain = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

// skipPlain returns the index of the first byte from i that is not plain,
// or len(b). It looks at eight bytes at a time while none of them is a
// quote, an escape or a control character (the bit tricks of "Bit
// Twiddling Hacks", determine if a word has a zero or a byte less than n):
// a client checks every string of every result it is sent, and a byte at
// a time that was a seventh of a subscriber's time.
//
// The lowest byte a test flags is exact (a borrow only runs upwards, from a
// byte that matches), so the word that holds the string's end gives its
// place at once, rather than a byte at a time after it: that walk was a
// third of the check.
func skipPlain(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		quote, escape := x^(ones*'"'), x^(ones*'\\')
		if m := ((x-ones*0x20)&^x | (quote-ones)&^quote | (escape-ones)&^escape) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(b) && plain[b[i]] {
		i++
	}
	return i
}

// str reads the string starting at i (its quote) and returns the index
// after it, or -1.
func str(b []byte, i int) int {
	for i++; i < len(b); i++ {
		i = skipPlain(b, i)
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func word(b []byte, i int, w string) int {
	if len(b)-i < len(w) || string(b[i:i+len(w)]) != w {
		return -1
	}
	return i + len(w)
}

// number reads the number starting at i and returns the index after it,
// or -1.
func number(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i+1 >= len(b) || b[i+1] < '0' || b[i+1] > '9' {
			return -1
		}
		i = digits(b, i+1)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return -1
		}
		i = digits(b, i)
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
