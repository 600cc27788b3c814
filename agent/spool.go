package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// Chunk is one piece of a job's output as the spool keeps it and the
// control plane receives it. Seq numbers the attempt's chunks from 1.
type Chunk struct {
	Seq    int64     `json:"seq"`
	Stream string    `json:"stream"` // stdout, stderr or system
	Data   string    `json:"data"`
	Time   time.Time `json:"time"`
}

// maxChunkData bounds a chunk's data: well under what the control plane
// accepts, even after invalid bytes became three-byte replacement runes.
const maxChunkData = 16 << 10

// spoolWriter appends chunks to a job's log file, one JSON line each, with
// O_APPEND so each line lands whole. Only the runner writes it.
type spoolWriter struct {
	f   *os.File
	seq int64
	err error
}

func openSpool(path string) (*spoolWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	w := &spoolWriter{f: f}
	// A runner that died mid-line left a torn last line; continue after the
	// chunks that are whole. (Only the agent repairs a log this way, after
	// the runner died.)
	chunks, torn, err := readSpool(path, 0)
	if err != nil {
		f.Close()
		return nil, err
	}
	if torn > 0 {
		if fi, err := f.Stat(); err == nil {
			if err := f.Truncate(fi.Size() - torn); err != nil {
				f.Close()
				return nil, err
			}
		}
	}
	if n := len(chunks); n > 0 {
		w.seq = chunks[n-1].Seq
	}
	return w, nil
}

// write appends data as one or more chunks. Output is made valid UTF-8
// without NUL characters (the control plane stores text) and split so no
// chunk exceeds maxChunkData.
func (w *spoolWriter) write(stream string, data []byte, at time.Time) {
	if w.err != nil || len(data) == 0 {
		return
	}
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	text = strings.ReplaceAll(text, "\x00", "\uFFFD")
	var buf bytes.Buffer
	for len(text) > 0 {
		n := min(len(text), maxChunkData)
		for n < len(text) && !utf8.RuneStart(text[n]) {
			n--
		}
		w.seq++
		line, err := json.Marshal(Chunk{Seq: w.seq, Stream: stream, Data: text[:n], Time: at.UTC()})
		if err != nil {
			w.err = err
			return
		}
		buf.Write(line)
		buf.WriteByte('\n')
		text = text[n:]
	}
	if _, err := w.f.Write(buf.Bytes()); err != nil {
		w.err = fmt.Errorf("append to the job's log: %w", err)
	}
}

func (w *spoolWriter) close() error {
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if w.err != nil {
		return w.err
	}
	return err
}

// readSpool returns the whole chunks of a log after seq after, and the
// length of a trailing partial line (a line still being written, or torn).
func readSpool(path string, after int64) ([]Chunk, int64, error) {
	var out []Chunk
	var offset int64
	for {
		chunks, next, err := readSpoolAt(path, offset, after, 1<<20)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, chunks...)
		if next == offset {
			size := int64(0)
			if fi, err := os.Stat(path); err == nil {
				size = fi.Size()
			}
			return out, size - next, nil
		}
		offset = next
	}
}

// readSpoolAt reads the whole lines of a log from byte offset, up to about
// maxBytes, and returns the chunks after seq after and the offset after the
// last whole line read.
func readSpoolAt(path string, offset, after int64, maxBytes int) ([]Chunk, int64, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, offset, nil
	}
	if err != nil {
		return nil, offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, err
	}
	var out []Chunk
	r := bufio.NewReaderSize(f, 64<<10)
	read := 0
	for read < maxBytes {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // a partial line waits for its end
		}
		if err != nil {
			return nil, offset, err
		}
		var c Chunk
		if err := json.Unmarshal(line, &c); err != nil {
			return nil, offset, fmt.Errorf("%s at byte %d: a line is not a chunk: %w", path, offset, err)
		}
		offset += int64(len(line))
		read += len(line)
		if c.Seq > after {
			out = append(out, c)
		}
	}
	return out, offset, nil
}
