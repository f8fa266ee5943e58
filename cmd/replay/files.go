package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// namedPath is a file a flag names; out says that the command writes it.
type namedPath struct {
	flag, path string
	out        bool
}

// checkDistinct refuses an output that is the same file as an input or
// as another output: the same inode for files that exist (a link, another
// spelling), else the same cleaned absolute path. Empty paths and "-"
// (standard input or output) are not files.
func checkDistinct(files []namedPath) error {
	for i, a := range files {
		if !a.out || a.path == "" || a.path == "-" {
			continue
		}
		for j, b := range files {
			if j == i || (b.out && j > i) || b.path == "" || b.path == "-" {
				continue
			}
			if sameFile(a.path, b.path) {
				return fmt.Errorf("%s %s: the same file as %s %s: give each output its own file", a.flag, a.path, b.flag, b.path)
			}
		}
	}
	return nil
}

// sameFile says whether a and b name one file.
func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	return absPath(a) == absPath(b)
}

// absPath is path made absolute and clean, its directory's symbolic links
// resolved when it exists.
func absPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}
