package sal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// PathOutsideRootsError refuses a path that is not inside any configured file
// root, or that could not be shown to be.
type PathOutsideRootsError struct {
	Path   string
	Roots  []string
	Reason string
}

func (e *PathOutsideRootsError) Error() string {
	if len(e.Roots) == 0 {
		return fmt.Sprintf("path %q refused: no file roots are configured on this node", e.Path)
	}
	return fmt.Sprintf("path %q refused: %s; allowed roots: %s", e.Path, e.Reason, strings.Join(e.Roots, ", "))
}

// FileTooLargeError refuses to read a file bigger than the limit asked for.
type FileTooLargeError struct {
	Path  string
	Size  int64 // at least this many bytes
	Limit int64
}

func (e *FileTooLargeError) Error() string {
	return fmt.Sprintf("file %q has at least %d bytes, more than the limit of %d: raise max_bytes or read a smaller file", e.Path, e.Size, e.Limit)
}

// FileInfo describes a file or directory.
type FileInfo struct {
	// Path is the path as asked for; RealPath is where it resolved to.
	Path     string    `json:"path"`
	RealPath string    `json:"real_path"`
	Type     string    `json:"type"` // "file", "dir", "symlink" or "other"
	Size     int64     `json:"size"`
	Mode     string    `json:"mode"` // permission bits in octal, e.g. "0644"
	ModTime  time.Time `json:"mod_time"`
}

// resolvedPath locates a path inside a root: the operations run through
// os.Root with rel, which also stops a symlink swapped in after the check.
type resolvedPath struct {
	real string // absolute, symlinks resolved
	root string
	rel  string
}

// resolve maps path to its real location and checks it is inside a root. The
// deepest existing ancestor has its symlinks resolved, so root/link -> /etc is
// refused; the missing rest is appended as is (it holds no symlinks yet).
func (s *System) resolve(path string) (resolvedPath, error) {
	return s.resolvePath(path, true)
}

// resolveEntry is resolve without following a symlink in the last element:
// removing a link removes the link, as rm(1) does.
func (s *System) resolveEntry(path string) (resolvedPath, error) {
	return s.resolvePath(path, false)
}

func (s *System) resolvePath(path string, followLast bool) (resolvedPath, error) {
	refuse := func(format string, a ...any) error {
		return &PathOutsideRootsError{Path: path, Roots: s.Roots(), Reason: fmt.Sprintf(format, a...)}
	}
	if len(s.roots) == 0 {
		return resolvedPath{}, refuse("no file roots are configured")
	}
	if !filepath.IsAbs(path) {
		return resolvedPath{}, refuse("the path is relative; give an absolute path")
	}
	if strings.ContainsRune(path, 0) {
		return resolvedPath{}, refuse("the path contains a NUL byte")
	}
	// ".." is refused outright rather than cleaned away: after a symlink, the
	// kernel's ".." and a lexical one name different directories.
	for _, elem := range strings.Split(path, "/") {
		if elem == ".." {
			return resolvedPath{}, refuse(`the path contains ".."`)
		}
	}
	clean := filepath.Clean(path)

	var real string
	if followLast || clean == "/" {
		r, err := realPath(clean)
		if err != nil {
			return resolvedPath{}, refuse("%v", err)
		}
		real = r
	} else {
		dir, err := realPath(filepath.Dir(clean))
		if err != nil {
			return resolvedPath{}, refuse("%v", err)
		}
		real = filepath.Join(dir, filepath.Base(clean))
	}

	best := -1
	for i, r := range s.roots {
		if within(r, real) && (best < 0 || len(r) > len(s.roots[best])) {
			best = i
		}
	}
	if best < 0 {
		if real != clean {
			return resolvedPath{}, refuse("it resolves to %s, which is outside every root", real)
		}
		return resolvedPath{}, refuse("it is outside every root")
	}
	rel, err := filepath.Rel(s.roots[best], real)
	if err != nil {
		return resolvedPath{}, refuse("%v", err)
	}
	return resolvedPath{real: real, root: s.roots[best], rel: rel}, nil
}

// realPath resolves symlinks in the deepest existing ancestor of p and
// appends the elements that do not exist yet.
func realPath(p string) (string, error) {
	existing := p
	var missing []string
	for {
		_, err := os.Lstat(existing)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return "", fmt.Errorf("cannot inspect %s: %w", existing, err)
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		missing = append(missing, filepath.Base(existing))
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		// A dangling symlink would let a write create its target anywhere.
		return "", fmt.Errorf("cannot resolve %s (a dangling symlink?): %w", existing, unwrapPathError(err))
	}
	for i := len(missing) - 1; i >= 0; i-- {
		real = filepath.Join(real, missing[i])
	}
	return real, nil
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, "../")
}

func (s *System) openRoot(rp resolvedPath) (*os.Root, error) {
	r, err := os.OpenRoot(rp.root)
	if err != nil {
		return nil, fmt.Errorf("sal: open file root %s: %w", rp.root, err)
	}
	return r, nil
}

// ReadFile returns the content of a file inside the roots. maxBytes <= 0 means
// the System's MaxReadBytes; a larger file gives *FileTooLargeError rather
// than a silently truncated read.
func (s *System) ReadFile(ctx context.Context, path string, maxBytes int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if maxBytes <= 0 || maxBytes > s.maxReadBytes {
		maxBytes = s.maxReadBytes
	}
	rp, err := s.resolve(path)
	if err != nil {
		return nil, err
	}
	root, err := s.openRoot(rp)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// O_NONBLOCK keeps open(2) of a FIFO from waiting for a writer; it does
	// nothing to regular files, the only kind read below.
	f, err := root.OpenFile(rp.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("sal: read %s: %w", path, unwrapPathError(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("sal: read %s: %w", path, unwrapPathError(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("sal: read %s: %w: it is a %s, not a regular file", path, ErrInvalidSpec, fileInfo(path, rp.real, fi).Type)
	}
	if fi.Size() > maxBytes {
		return nil, &FileTooLargeError{Path: path, Size: fi.Size(), Limit: maxBytes}
	}
	// Read one byte past the limit: sizes of special files lie, and a file
	// may grow between Stat and Read.
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("sal: read %s: %w", path, unwrapPathError(err))
	}
	if int64(len(data)) > maxBytes {
		return nil, &FileTooLargeError{Path: path, Size: int64(len(data)), Limit: maxBytes}
	}
	return data, nil
}

// WriteFile replaces a file atomically: readers see the old content or the
// new, never a mix, and a crash leaves no partial file. The data goes to a
// temporary file in the same directory, is synced, renamed over the target,
// and the directory is synced so the rename itself survives a power cut. The
// parent directory must exist (see MkdirAll). mode 0 keeps the mode of the
// file being replaced, or 0644 for a new file.
func (s *System) WriteFile(ctx context.Context, path string, data []byte, mode os.FileMode) (FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return FileInfo{}, err
	}
	if mode&^os.ModePerm != 0 {
		return FileInfo{}, fmt.Errorf("sal: write %s: %w: mode %o has bits beyond the permissions", path, ErrInvalidSpec, mode)
	}
	rp, err := s.resolve(path)
	if err != nil {
		return FileInfo{}, err
	}
	if rp.rel == "." {
		return FileInfo{}, fmt.Errorf("sal: write %s: %w: it is a file root", path, ErrInvalidSpec)
	}
	root, err := s.openRoot(rp)
	if err != nil {
		return FileInfo{}, err
	}
	defer root.Close()
	if mode == 0 {
		// The rename replaces the inode, so an unchanged mode must be copied.
		mode = 0o644
		if fi, err := root.Stat(rp.rel); err == nil && fi.Mode().IsRegular() {
			mode = fi.Mode().Perm()
		}
	}

	dir := filepath.Dir(rp.rel)
	tmp := filepath.Join(dir, "."+filepath.Base(rp.rel)+".tmp-"+randomSuffix())
	if err := writeSynced(root, tmp, data, mode); err != nil {
		_ = root.Remove(tmp)
		if errors.Is(err, fs.ErrNotExist) {
			return FileInfo{}, fmt.Errorf("sal: write %s: the directory %s does not exist; create it first: %w", path, filepath.Dir(path), err)
		}
		return FileInfo{}, fmt.Errorf("sal: write %s: %w", path, err)
	}
	if err := root.Rename(tmp, rp.rel); err != nil {
		_ = root.Remove(tmp)
		return FileInfo{}, fmt.Errorf("sal: write %s: replace the file: %w", path, unwrapPathError(err))
	}
	if d, err := root.Open(dir); err == nil {
		// Best effort: some file systems refuse fsync on directories.
		_ = d.Sync()
		_ = d.Close()
	}
	fi, err := root.Stat(rp.rel)
	if err != nil {
		return FileInfo{}, fmt.Errorf("sal: write %s: %w", path, unwrapPathError(err))
	}
	return fileInfo(path, rp.real, fi), nil
}

func writeSynced(root *os.Root, name string, data []byte, mode os.FileMode) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return unwrapPathError(err)
	}
	// The umask may have narrowed the mode given to open.
	if err := f.Chmod(mode); err != nil {
		_ = f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Stat describes a file or directory inside the roots, following symlinks.
func (s *System) Stat(ctx context.Context, path string) (FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return FileInfo{}, err
	}
	rp, err := s.resolve(path)
	if err != nil {
		return FileInfo{}, err
	}
	root, err := s.openRoot(rp)
	if err != nil {
		return FileInfo{}, err
	}
	defer root.Close()
	fi, err := root.Stat(rp.rel)
	if err != nil {
		return FileInfo{}, fmt.Errorf("sal: stat %s: %w", path, unwrapPathError(err))
	}
	return fileInfo(path, rp.real, fi), nil
}

// Remove deletes a file, a symlink (not its target) or an empty directory.
// A missing path gives an error wrapping fs.ErrNotExist.
func (s *System) Remove(ctx context.Context, path string) error {
	return s.remove(ctx, path, false)
}

// RemoveAll deletes a path and everything below it. A missing path is not an
// error, so a repeated removal does no harm.
func (s *System) RemoveAll(ctx context.Context, path string) error {
	return s.remove(ctx, path, true)
}

func (s *System) remove(ctx context.Context, path string, all bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rp, err := s.resolveEntry(path)
	if err != nil {
		return err
	}
	if rp.rel == "." {
		return fmt.Errorf("sal: remove %s: %w: it is a file root", path, ErrInvalidSpec)
	}
	root, err := s.openRoot(rp)
	if err != nil {
		return err
	}
	defer root.Close()
	if all {
		err = root.RemoveAll(rp.rel)
	} else {
		err = root.Remove(rp.rel)
	}
	if err != nil {
		return fmt.Errorf("sal: remove %s: %w", path, unwrapPathError(err))
	}
	return nil
}

// MkdirAll creates a directory and its missing parents inside the roots.
// mode 0 means 0755.
func (s *System) MkdirAll(ctx context.Context, path string, mode os.FileMode) (FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return FileInfo{}, err
	}
	if mode&^os.ModePerm != 0 {
		return FileInfo{}, fmt.Errorf("sal: mkdir %s: %w: mode %o has bits beyond the permissions", path, ErrInvalidSpec, mode)
	}
	if mode == 0 {
		mode = 0o755
	}
	rp, err := s.resolve(path)
	if err != nil {
		return FileInfo{}, err
	}
	root, err := s.openRoot(rp)
	if err != nil {
		return FileInfo{}, err
	}
	defer root.Close()
	if err := root.MkdirAll(rp.rel, mode); err != nil {
		return FileInfo{}, fmt.Errorf("sal: mkdir %s: %w", path, unwrapPathError(err))
	}
	fi, err := root.Stat(rp.rel)
	if err != nil {
		return FileInfo{}, fmt.Errorf("sal: mkdir %s: %w", path, unwrapPathError(err))
	}
	return fileInfo(path, rp.real, fi), nil
}

func fileInfo(path, real string, fi fs.FileInfo) FileInfo {
	t := "other"
	switch {
	case fi.Mode().IsRegular():
		t = "file"
	case fi.IsDir():
		t = "dir"
	case fi.Mode()&fs.ModeSymlink != 0:
		t = "symlink"
	}
	return FileInfo{
		Path:     path,
		RealPath: real,
		Type:     t,
		Size:     fi.Size(),
		Mode:     fmt.Sprintf("%04o", fi.Mode().Perm()),
		ModTime:  fi.ModTime().UTC(),
	}
}
