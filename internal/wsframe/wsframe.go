// Package wsframe reads and writes WebSocket frames (RFC 6455 section 5):
// the one place their layout is spelled out. The server frames the
// messages it writes with it, and the client reads and writes its whole
// connection with it, where a subscriber of a busy log reads thousands of
// messages a second.
//
// Extensions are never negotiated, so the reserved bits must be clear.
package wsframe

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
)

// Opcode is what a frame carries.
type Opcode byte

// The opcodes of RFC 6455 section 5.2.
const (
	Continuation Opcode = 0x0
	Text         Opcode = 0x1
	Binary       Opcode = 0x2
	Close        Opcode = 0x8
	Ping         Opcode = 0x9
	Pong         Opcode = 0xa
)

// Control says whether the opcode is a control frame's (close, ping, pong):
// those are never fragmented and carry at most MaxControl bytes.
func (o Opcode) Control() bool { return o&0x8 != 0 }

// MaxControl is the most a control frame carries.
const MaxControl = 125

// MaxHeader is the longest a frame's header is: two bytes, eight of
// length, four of mask.
const MaxHeader = 14

// Close codes (RFC 6455 section 7.4) Cairn's WebSocket peers send or act
// on, besides its own (4400 and up).
const (
	StatusNormalClosure = 1000
	StatusProtocolError = 1002
	// StatusNoStatus stands for a close frame that carried no code; it is
	// never sent.
	StatusNoStatus      = 1005
	StatusMessageTooBig = 1009
	// StatusTryAgainLater: the server cannot reach its database.
	StatusTryAgainLater = 1013
)

// AcceptKey is the Sec-WebSocket-Accept that answers a handshake's
// Sec-WebSocket-Key (RFC 6455 section 4.2.2).
func AcceptKey(key string) string {
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// HeaderTokens yields the comma-separated tokens of every value of the
// header name, trimmed: the handshake's Connection, Upgrade and
// Sec-WebSocket-Protocol. Subprotocols compare as they are, the others
// without regard to case.
func HeaderTokens(h http.Header, name string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, v := range h.Values(name) {
			for t := range strings.SplitSeq(v, ",") {
				if !yield(strings.TrimSpace(t)) {
					return
				}
			}
		}
	}
}

// ErrProtocol is a frame that breaks RFC 6455; the connection should be
// closed with status 1002.
var ErrProtocol = errors.New("WebSocket protocol violation")

// AppendHeader appends the header of one final frame of op carrying n
// bytes; with mask set (a client's frame), the frame says it is masked
// with mask, which the payload must then be (Mask).
func AppendHeader(b []byte, op Opcode, n int, mask *[4]byte) []byte {
	var masked byte
	if mask != nil {
		masked = 0x80
	}
	b = append(b, 0x80|byte(op))
	switch {
	case n < 126:
		b = append(b, masked|byte(n))
	case n <= 0xffff:
		b = append(b, masked|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, masked|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if mask != nil {
		b = append(b, mask[:]...)
	}
	return b
}

// Mask masks (or unmasks) p with key, as the payload's bytes from the
// start of the frame.
func Mask(key [4]byte, p []byte) {
	k := binary.LittleEndian.Uint32(key[:])
	k8 := uint64(k) | uint64(k)<<32
	for len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, binary.LittleEndian.Uint64(p)^k8)
		p = p[8:]
	}
	for i := range p {
		p[i] ^= key[i&3]
	}
}

// Header is a frame's header.
type Header struct {
	Fin    bool
	Op     Opcode
	Masked bool
	Key    [4]byte
	Len    int64
}

// Reader reads frames from a connection through a buffer that starts small
// and grows while the peer writes faster than it is read: an idle
// connection holds little, a busy one reads many messages a call.
type Reader struct {
	rd   io.Reader
	buf  []byte
	r, w int
	max  int
	full bool // the last read filled the buffer
}

// NewReader reads from rd through a buffer of size bytes, growing to
// limit.
func NewReader(rd io.Reader, size, limit int) *Reader {
	size = max(size, MaxHeader)
	return &Reader{rd: rd, buf: make([]byte, size), max: max(size, limit)}
}

// fill reads once more from the connection into the buffer, grown first
// when the last read filled it: more was likely waiting.
func (r *Reader) fill() error {
	if r.full && len(r.buf) < r.max {
		grown := make([]byte, min(2*len(r.buf), r.max))
		r.w = copy(grown, r.buf[r.r:r.w])
		r.r = 0
		r.buf = grown
	} else if r.r > 0 {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	n, err := r.rd.Read(r.buf[r.w:])
	r.w += n
	r.full = r.w == len(r.buf)
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// need makes n bytes buffered (n ≤ MaxHeader).
func (r *Reader) need(n int) error {
	for r.w-r.r < n {
		if err := r.fill(); err != nil {
			if errors.Is(err, io.EOF) && r.w > r.r {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// Header reads the next frame's header.
func (r *Reader) Header() (Header, error) {
	if err := r.need(2); err != nil {
		return Header{}, err
	}
	b0, b1 := r.buf[r.r], r.buf[r.r+1]
	h := Header{Fin: b0&0x80 != 0, Op: Opcode(b0 & 0x0f), Masked: b1&0x80 != 0}
	size := 2
	switch b1 & 0x7f {
	case 126:
		size += 2
	case 127:
		size += 8
	}
	if h.Masked {
		size += 4
	}
	if err := r.need(size); err != nil {
		return Header{}, eof(err)
	}
	b := r.buf[r.r : r.r+size]
	r.r += size
	switch n := b1 & 0x7f; n {
	case 126:
		h.Len = int64(binary.BigEndian.Uint16(b[2:]))
	case 127:
		u := binary.BigEndian.Uint64(b[2:])
		if u > 1<<62 {
			return Header{}, fmt.Errorf("%w: a frame of %d bytes", ErrProtocol, u)
		}
		h.Len = int64(u)
	default:
		h.Len = int64(n)
	}
	if h.Masked {
		copy(h.Key[:], b[size-4:])
	}
	switch {
	case b0&0x70 != 0:
		return Header{}, fmt.Errorf("%w: reserved bits set with no extension negotiated", ErrProtocol)
	case h.Op > Binary && !h.Op.Control() || h.Op > Pong:
		return Header{}, fmt.Errorf("%w: unknown opcode %#x", ErrProtocol, byte(h.Op))
	case h.Op.Control() && (!h.Fin || h.Len > MaxControl):
		return Header{}, fmt.Errorf("%w: a control frame fragmented or longer than %d bytes", ErrProtocol, MaxControl)
	}
	return h, nil
}

// ReadFull reads exactly len(p) bytes of payload: what is buffered, then
// straight from the connection into p when more is left than the buffer
// holds.
func (r *Reader) ReadFull(p []byte) error {
	n := copy(p, r.buf[r.r:r.w])
	r.r += n
	p = p[n:]
	if len(p) == 0 {
		return nil
	}
	if len(p) >= len(r.buf) {
		_, err := io.ReadFull(r.rd, p)
		return eof(err)
	}
	for len(p) > 0 {
		if err := r.fill(); err != nil {
			return eof(err)
		}
		n := copy(p, r.buf[r.r:r.w])
		r.r += n
		p = p[n:]
	}
	return nil
}

// eof is err, with an end of the connection in the middle of a frame said
// to be unexpected.
func eof(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
