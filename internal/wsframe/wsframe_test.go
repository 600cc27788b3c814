package wsframe

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
)

func TestFramesReadAsTheyWereWritten(t *testing.T) {
	t.Parallel()
	key := [4]byte{1, 2, 3, 4}
	for _, tc := range []struct {
		name string
		op   Opcode
		n    int
		mask *[4]byte
	}{
		{"empty text", Text, 0, nil},
		{"longest with a one-byte length", Text, 125, nil},
		{"shortest with a two-byte length", Binary, 126, nil},
		{"longest with a two-byte length", Text, 0xffff, &key},
		{"shortest with an eight-byte length", Text, 0x10000, &key},
		{"masked ping", Ping, 125, &key},
		{"close", Close, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			payload := bytes.Repeat([]byte("cairn-"), tc.n/6+1)[:tc.n]
			b := AppendHeader(nil, tc.op, tc.n, tc.mask)
			body := bytes.Clone(payload)
			if tc.mask != nil {
				Mask(*tc.mask, body)
				if tc.n > 0 && bytes.Equal(body, payload) {
					t.Fatal("masking left the payload as it was")
				}
			}
			b = append(b, body...)
			b = append(b, AppendHeader(nil, Pong, 0, nil)...) // a frame after it
			r := NewReader(bytes.NewReader(b), 16, 1<<10)
			h, err := r.Header()
			if err != nil {
				t.Fatal(err)
			}
			if !h.Fin || h.Op != tc.op || h.Len != int64(tc.n) || h.Masked != (tc.mask != nil) {
				t.Fatalf("header %+v, want final %v of %d bytes, masked %v", h, tc.op, tc.n, tc.mask != nil)
			}
			got := make([]byte, h.Len)
			if err := r.ReadFull(got); err != nil {
				t.Fatal(err)
			}
			if h.Masked {
				Mask(h.Key, got)
			}
			if !bytes.Equal(got, payload) {
				t.Fatal("the payload read is not the one written")
			}
			if h, err := r.Header(); err != nil || h.Op != Pong {
				t.Fatalf("the next frame: %+v, %v", h, err)
			}
			if _, err := r.Header(); !errors.Is(err, io.EOF) {
				t.Fatalf("after the last frame: %v, want EOF", err)
			}
		})
	}
}

func TestHeadersThatBreakTheProtocolAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		header []byte
		want   error
	}{
		{"reserved bit set", []byte{0x80 | 0x40 | 0x1, 0}, ErrProtocol},
		{"unknown data opcode", []byte{0x83, 0}, ErrProtocol},
		{"unknown control opcode", []byte{0x8b, 0}, ErrProtocol},
		{"fragmented ping", []byte{0x09, 0}, ErrProtocol},
		{"close longer than a control frame may be", []byte{0x88, 126, 0, 126}, ErrProtocol},
		{"length with the top bit set", []byte{0x81, 127, 0x80, 0, 0, 0, 0, 0, 0, 0}, ErrProtocol},
		{"connection ends inside a header", []byte{0x81, 126, 1}, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewReader(bytes.NewReader(tc.header), 0, 0).Header()
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// countingReader counts the reads of the connection.
type countingReader struct {
	r     io.Reader
	calls int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.calls++
	return c.r.Read(p)
}

func TestTheBufferGrowsWhileTheConnectionKeepsItFull(t *testing.T) {
	t.Parallel()
	var b []byte
	for range 1000 {
		b = AppendHeader(b, Text, 100, nil)
		b = append(b, bytes.Repeat([]byte{'x'}, 100)...)
	}
	src := &countingReader{r: bytes.NewReader(b)}
	r := NewReader(src, 64, 16<<10)
	p := make([]byte, 100)
	for i := range 1000 {
		h, err := r.Header()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if err := r.ReadFull(p[:h.Len]); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	if len(r.buf) != 16<<10 {
		t.Fatalf("the buffer is %d bytes, want grown to 16 KiB", len(r.buf))
	}
	// 102 KB through a buffer that doubles from 64 bytes to 16 KiB: a
	// buffer that never grew would take 1,600 reads.
	if src.calls > 20 {
		t.Fatalf("%d reads of the connection", src.calls)
	}
	if _, err := r.Header(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v", err)
	}
}

func TestAPayloadLargerThanTheBufferIsReadWhole(t *testing.T) {
	t.Parallel()
	payload := bytes.Repeat([]byte("0123456789"), 10_000)
	b := append(AppendHeader(nil, Binary, len(payload), nil), payload...)
	r := NewReader(bytes.NewReader(b), 16, 64)
	h, err := r.Header()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, h.Len)
	if err := r.ReadFull(got); err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	short := NewReader(bytes.NewReader(b[:len(b)-1]), 16, 64)
	if _, err := short.Header(); err != nil {
		t.Fatal(err)
	}
	if err := short.ReadFull(got); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a payload cut short: %v", err)
	}
}

// The handshake's answer is the one RFC 6455 gives for its sample key.
func TestAcceptKeyAnswersTheRFCsSample(t *testing.T) {
	t.Parallel()
	if got := AcceptKey("dGhlIHNhbXBsZSBub25jZQ=="); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("accept %q", got)
	}
}

// A handshake header's tokens come trimmed, from every value, in order.
func TestHeaderTokensReadsEveryValue(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Add("Connection", "keep-alive, Upgrade")
	h.Add("Connection", " close ")
	var got []string
	for tok := range HeaderTokens(h, "Connection") {
		got = append(got, tok)
	}
	if want := []string{"keep-alive", "Upgrade", "close"}; !slices.Equal(got, want) {
		t.Fatalf("tokens %q, want %q", got, want)
	}
	for range HeaderTokens(h, "Connection") {
		break // stopping early must not panic
	}
}
