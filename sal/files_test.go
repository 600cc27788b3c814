package sal

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestFilesInsideRoot(t *testing.T) {
	t.Parallel()
	s, root := newTestSystem(t)
	ctx := context.Background()
	dir := filepath.Join(root, "a", "b")

	if _, err := s.MkdirAll(ctx, dir, 0o750); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "conf.txt")
	fi, err := s.WriteFile(ctx, p, []byte("one\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Type != "file" || fi.Size != 4 || fi.Mode != "0600" || fi.RealPath != p {
		t.Errorf("after write: %+v", fi)
	}
	got, err := s.ReadFile(ctx, p, 0)
	if err != nil || string(got) != "one\n" {
		t.Fatalf("read = %q, %v", got, err)
	}

	// A rewrite without mode keeps the file's mode, and leaves no temp file.
	for _, content := range []string{"two\n", "three\n"} {
		if _, err := s.WriteFile(ctx, p, []byte(content), 0); err != nil {
			t.Fatal(err)
		}
	}
	fi, err = s.Stat(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode != "0600" || fi.Size != 6 {
		t.Errorf("after rewrite: %+v", fi)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "conf.txt" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only conf.txt", names)
	}

	st, err := s.Stat(ctx, dir)
	if err != nil || st.Type != "dir" {
		t.Errorf("stat dir = %+v, %v", st, err)
	}

	if err := s.Remove(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat after remove: want fs.ErrNotExist, got %v", err)
	}
	if err := s.Remove(ctx, p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("second remove: want fs.ErrNotExist, got %v", err)
	}
	if err := s.RemoveAll(ctx, filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveAll(ctx, filepath.Join(root, "a")); err != nil {
		t.Errorf("RemoveAll of a missing path: %v", err)
	}
}

func TestReadFileLimit(t *testing.T) {
	t.Parallel()
	s, root := newTestSystem(t)
	ctx := context.Background()
	p := filepath.Join(root, "big")
	if _, err := s.WriteFile(ctx, p, bytes.Repeat([]byte("x"), 100), 0); err != nil {
		t.Fatal(err)
	}
	_, err := s.ReadFile(ctx, p, 99)
	var tl *FileTooLargeError
	if !errors.As(err, &tl) || tl.Limit != 99 || tl.Size != 100 {
		t.Fatalf("want *FileTooLargeError{100, 99}, got %v", err)
	}
	if data, err := s.ReadFile(ctx, p, 100); err != nil || len(data) != 100 {
		t.Fatalf("read at the limit: %d bytes, %v", len(data), err)
	}
	if _, err := s.ReadFile(ctx, root, 0); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("reading a directory: want ErrInvalidSpec, got %v", err)
	}
	fifo := filepath.Join(root, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadFile(ctx, fifo, 0); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("reading a FIFO: want ErrInvalidSpec without blocking, got %v", err)
	}
}

func TestWriteFileNeedsParent(t *testing.T) {
	t.Parallel()
	s, root := newTestSystem(t)
	_, err := s.WriteFile(context.Background(), filepath.Join(root, "missing", "f"), []byte("x"), 0)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "create it first") {
		t.Fatalf("want a not-exist error that says what to do, got %v", err)
	}
	if _, err := s.WriteFile(context.Background(), filepath.Join(root, "f"), []byte("x"), 0o4755); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("setuid mode: want ErrInvalidSpec, got %v", err)
	}
}

func TestPathsOutsideRootsAreRefused(t *testing.T) {
	t.Parallel()
	s, root := newTestSystem(t)
	ctx := context.Background()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "filelink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "nothing-yet"), filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}

	paths := []struct {
		name, path string
	}{
		{"absolute outside", secret},
		{"system file", "/etc/passwd"},
		{"dotdot escape", root + "/../" + filepath.Base(outside) + "/secret"},
		{"dotdot that stays inside", root + "/x/../y"},
		{"relative", "secret"},
		{"through a directory symlink", filepath.Join(root, "link", "secret")},
		{"new file through a directory symlink", filepath.Join(root, "link", "new")},
		{"through a file symlink", filepath.Join(root, "filelink")},
		{"through a dangling symlink", filepath.Join(root, "dangling")},
	}
	ops := []struct {
		name string
		do   func(path string) error
	}{
		{"read", func(p string) error { _, err := s.ReadFile(ctx, p, 0); return err }},
		{"write", func(p string) error { _, err := s.WriteFile(ctx, p, []byte("pwned"), 0); return err }},
		{"stat", func(p string) error { _, err := s.Stat(ctx, p); return err }},
		{"mkdir", func(p string) error { _, err := s.MkdirAll(ctx, p, 0); return err }},
		{"remove", func(p string) error { return s.RemoveAll(ctx, p+"/sub") }},
	}
	for _, tp := range paths {
		for _, op := range ops {
			t.Run(tp.name+"/"+op.name, func(t *testing.T) {
				err := op.do(tp.path)
				var pe *PathOutsideRootsError
				if !errors.As(err, &pe) {
					t.Fatalf("want *PathOutsideRootsError, got %v", err)
				}
				if !strings.HasPrefix(pe.Path, tp.path) || !slices.Equal(pe.Roots, []string{root}) {
					t.Errorf("error names %q and %v", pe.Path, pe.Roots)
				}
				if !strings.Contains(err.Error(), root) {
					t.Errorf("message does not name the root: %v", err)
				}
			})
		}
	}
	if data, _ := os.ReadFile(secret); string(data) != "s" {
		t.Errorf("the file outside the root was changed to %q", data)
	}
	if _, err := os.Lstat(filepath.Join(outside, "nothing-yet")); err == nil {
		t.Errorf("a write through the dangling symlink created its target")
	}
}

func TestSymlinksInsideRoot(t *testing.T) {
	t.Parallel()
	s, root := newTestSystem(t)
	ctx := context.Background()
	if err := os.Mkdir(filepath.Join(root, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteFile(ctx, filepath.Join(root, "alias", "f"), []byte("ok"), 0); err != nil {
		t.Fatalf("a symlink that stays inside the root must work: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(root, "real", "f")); err != nil || string(data) != "ok" {
		t.Fatalf("file through alias: %q, %v", data, err)
	}

	// Removing a symlink removes the link, even one pointing outside.
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the link's target went too: %v", err)
	}
	if err := s.Remove(ctx, root); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("removing the root itself: want ErrInvalidSpec, got %v", err)
	}
}

func TestNoRootsRefusesEverything(t *testing.T) {
	t.Parallel()
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Stat(context.Background(), t.TempDir())
	var pe *PathOutsideRootsError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "no file roots") {
		t.Fatalf("want a refusal naming the missing roots, got %v", err)
	}
}

func TestNewRejectsBadRoots(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"", filepath.Join(t.TempDir(), "missing"), file} {
		if _, err := New(Config{FileRoots: []string{r}}); err == nil {
			t.Errorf("root %q accepted", r)
		}
	}
}
