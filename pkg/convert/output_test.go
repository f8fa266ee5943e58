package convert

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFinish: an export's end: the summary, the skips, and its outputs put
// in place unless --strict refuses a skip (the previous files stay);
// standard output is written as it goes.
func TestFinish(t *testing.T) {
	for _, c := range []struct {
		name       string
		skips      int
		strict     bool
		wantErr    string
		wantStderr string
		replaced   bool
	}{
		{"clean", 0, true, "", "replay: wrote 2 targets\n", true},
		{"skips, not strict", 1, false, "", "replay: wrote 2 targets\nreplay: skipped 1 line:\n  line 1: a gRPC pair\n", true},
		{"skips, strict", 2, true, "--strict: 2 lines could not be converted", "replay: wrote 2 targets\nreplay: skipped 2 lines:\n  line 1: a gRPC pair\n  line 2: a gRPC pair\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			paths := []string{filepath.Join(dir, "script.js"), filepath.Join(dir, "script.data.json")}
			var outs []*Output
			for _, p := range paths {
				os.WriteFile(p, []byte("previous\n"), 0o644)
				o, err := Create("-o", p, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer o.Abort()
				fmt.Fprintf(o, "new %s\n", filepath.Base(p))
				outs = append(outs, o)
			}
			sk := NewSkipLog("line")
			for i := range c.skips {
				sk.Add(i+1, "a gRPC pair")
			}
			var stderr bytes.Buffer
			err := Finish(&stderr, "wrote 2 targets", sk, c.strict, outs...)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || err.Error() != c.wantErr) {
				t.Errorf("got %v, want %q", err, c.wantErr)
			}
			if stderr.String() != c.wantStderr {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), c.wantStderr)
			}
			for _, o := range outs {
				o.Abort() // as the caller's defer does
			}
			for _, p := range paths {
				want := "previous\n"
				if c.replaced {
					want = "new " + filepath.Base(p) + "\n"
				}
				if got, _ := os.ReadFile(p); string(got) != want {
					t.Errorf("%s: %q, want %q", filepath.Base(p), got, want)
				}
			}
		})
	}
}

// TestCreate: "" and "-" are standard output; a file that cannot be made
// names its flag.
func TestCreate(t *testing.T) {
	var stdout bytes.Buffer
	for _, path := range []string{"", "-"} {
		o, err := Create("-o", path, &stdout)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(o, "as it goes;")
		o.Abort()
		if err := o.Commit(); err != nil {
			t.Error(err)
		}
	}
	if stdout.String() != "as it goes;as it goes;" {
		t.Errorf("stdout %q", stdout.String())
	}
	dir := t.TempDir()
	if _, err := Create("--skipped", dir, nil); err == nil || !strings.HasPrefix(err.Error(), "--skipped: ") || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
	if _, err := Create("-o", filepath.Join(dir, "no", "such", "dir"), nil); err == nil || !strings.HasPrefix(err.Error(), "-o: ") {
		t.Errorf("no directory: %v", err)
	}
}

// TestSkipLogReport: the count and its plural, the first five with their
// place (and file), the rest counted; --strict counts only what was
// traffic.
func TestSkipLogReport(t *testing.T) {
	for _, c := range []struct {
		name   string
		add    func(*SkipLog)
		want   string
		strict string // --strict's error; "" for none
	}{
		{"none", func(*SkipLog) {}, "", ""},
		{"one", func(s *SkipLog) { s.Add(4, "url: ftp") }, "replay: skipped 1 entry:\n  entry 4: url: ftp\n", "--strict: 1 entry could not be converted"},
		{"in files", func(s *SkipLog) { s.AddIn("a.gor", 2, "x"); s.AddIn("b.gor", 1, "y") },
			"replay: skipped 2 entries:\n  a.gor entry 2: x\n  b.gor entry 1: y\n", "--strict: 2 entries could not be converted"},
		{"never traffic", func(s *SkipLog) { s.AddOffNetwork(1, "cache: hit"); s.AddOffNetwork(2, "websocket: ws") },
			"replay: skipped 2 entries:\n  entry 1: cache: hit\n  entry 2: websocket: ws\n", ""},
		{"seven", func(s *SkipLog) {
			for i := range 7 {
				s.Add(i+1, "why")
			}
			s.AddOffNetwork(8, "cache: hit")
		}, "replay: skipped 8 entries:\n  entry 1: why\n  entry 2: why\n  entry 3: why\n  entry 4: why\n  entry 5: why\n  ... and 3 more\n", "--strict: 7 entries could not be converted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sk := NewSkipLog("entry")
			c.add(sk)
			var w bytes.Buffer
			if err := sk.Report(&w, false); err != nil || w.String() != c.want {
				t.Errorf("got %v,\n%s\nwant\n%s", err, w.String(), c.want)
			}
			err := sk.Report(&bytes.Buffer{}, true)
			if c.strict == "" && err != nil || c.strict != "" && (err == nil || err.Error() != c.strict) {
				t.Errorf("--strict: got %v, want %q", err, c.strict)
			}
		})
	}
}
