package outfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckDistinct: an output is refused when it is an input or another
// output, however spelled (a hard link, a symbolic link to its directory,
// "." and ".."), existing or not; inputs may repeat, and "" and "-" are
// no files.
func TestCheckDistinct(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.jsonl")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	linkDir := filepath.Join(dir, "linkdir")
	if err := os.Symlink(sub, linkDir); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(sub, "new.json") // not there: compared by path
	for _, c := range []struct {
		name  string
		files []Named
		want  string // "" for no error
	}{
		{"distinct", []Named{In("-f", in), Out("-o", fresh)}, ""},
		{"output is the input", []Named{Out("-o", in), In("-f", in)}, "-o " + in + ": the same file as -f " + in},
		{"output is a hard link of the input", []Named{In("-f", in), Out("-o", hard)}, "-o " + hard + ": the same file as -f " + in + ": give each output its own file"},
		{"two new outputs", []Named{Out("--junit", fresh), Out("--html", filepath.Join(sub, ".", "x", "..", "new.json"))}, "--html " + filepath.Join(sub, ".", "x", "..", "new.json") + ": the same file as --junit"},
		{"through a linked directory", []Named{Out("--out", fresh), Out("--hgrm", filepath.Join(linkDir, "new.json"))}, "the same file as --out"},
		{"inputs may repeat", []Named{In("FILE.json", in), In("FILE.json", in), Out("-o", fresh)}, ""},
		{"standard streams are no files", []Named{In("-f", "-"), Out("-o", "-"), Out("--skipped", "-"), Out("--html", "")}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckDistinct(c.files)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestSameFile: the same inode, or, when one is not there, the same
// absolute path.
func TestSameFile(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	os.WriteFile(a, nil, 0o644)
	b := filepath.Join(dir, "b")
	os.WriteFile(b, nil, 0o644)
	t.Chdir(dir)
	for _, c := range []struct {
		x, y string
		want bool
	}{
		{a, "a", true},
		{a, "./sub/../a", true},
		{a, b, false},
		{"missing", filepath.Join(dir, "missing"), true},
		{"missing", "other", false},
	} {
		if got := SameFile(c.x, c.y); got != c.want {
			t.Errorf("SameFile(%q, %q) = %v, want %v", c.x, c.y, got, c.want)
		}
	}
}
