package outfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Named is a file a flag names, as CheckDistinct sees it: Output says
// that the command writes it.
type Named struct {
	Flag, Path string
	Output     bool
}

// In is a file the command reads, named by flag.
func In(flag, path string) Named { return Named{Flag: flag, Path: path} }

// Out is a file the command writes, named by flag.
func Out(flag, path string) Named { return Named{Flag: flag, Path: path, Output: true} }

// CheckDistinct refuses an output that is the same file as an input or
// as another output (docs/design.md: no output may name an input): the same
// inode for files that exist (a link, another spelling), else the same
// cleaned absolute path. Empty paths and "-" (standard input or output)
// are not files. The error names both flags, the output's first.
func CheckDistinct(files []Named) error {
	for i, a := range files {
		if !a.Output || a.Path == "" || a.Path == "-" {
			continue
		}
		for j, b := range files {
			if j == i || (b.Output && j > i) || b.Path == "" || b.Path == "-" {
				continue // two outputs are compared once, the later named first
			}
			if SameFile(a.Path, b.Path) {
				return fmt.Errorf("%s %s: the same file as %s %s: give each output its own file", a.Flag, a.Path, b.Flag, b.Path)
			}
		}
	}
	return nil
}

// SameFile says whether a and b name one file: the same inode when both
// exist, else the same absolute path (AbsPath).
func SameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	return AbsPath(a) == AbsPath(b)
}

// AbsPath is path made absolute and clean, its directory's symbolic links
// resolved when it exists: two spellings of a file not there yet compare
// equal.
func AbsPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}
