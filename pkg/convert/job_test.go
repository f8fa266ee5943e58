package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fake is an importer whose inputs are lines: "pair X" writes X, "skip
// why" skips the line, "gone why" skips it as never traffic, "fail" ends
// the conversion with an error.
func fake(several bool) Importer {
	return Importer{Name: "fake", What: "entry", Several: several, Convert: func(ins []Input, w io.Writer, sk *SkipLog) (Result, error) {
		written := 0
		for _, in := range ins {
			b, err := io.ReadAll(in.R)
			if err != nil {
				return Result{}, err
			}
			for n, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
				verb, arg, _ := strings.Cut(line, " ")
				file := ""
				if len(ins) > 1 {
					file = in.Name
				}
				switch verb {
				case "pair":
					fmt.Fprintln(w, arg)
					written++
				case "skip":
					sk.AddIn(file, n+1, arg)
				case "gone":
					sk.AddOffNetwork(n+1, arg)
				case "fail":
					return Result{}, errors.New("line " + fmt.Sprint(n+1) + ": broken")
				}
			}
		}
		return Result{Summary: fmt.Sprintf("%d pairs written", written), Written: written}, nil
	}}
}

// files writes each name's content in dir, and returns their paths.
func files(t *testing.T, dir string, contents map[string]string) {
	t.Helper()
	for name, data := range contents {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type ran struct {
	err            error
	stdout, stderr string
}

func runJob(imp Importer, job Job, stdin string) ran {
	var out, errb bytes.Buffer
	job.Stdin, job.Stdout, job.Stderr = strings.NewReader(stdin), &out, &errb
	err := Import(imp, job)
	return ran{err, out.String(), errb.String()}
}

// TestImportOutput: -o is put in place only when the import succeeded:
// never after an error, nor when no pair was written, nor when --strict
// refused a skip; the file that was there stays as it was, and no
// temporary file is left.
func TestImportOutput(t *testing.T) {
	dir := t.TempDir()
	files(t, dir, map[string]string{
		"good":    "pair a\nskip odd\npair b\n",
		"late":    "pair a\npair b\nfail\n",
		"skipped": "skip one\nskip two\n",
		"empty":   "",
		"gone":    "pair a\ngone cache hit\n",
	})
	for _, c := range []struct {
		name, in string
		strict   bool
		want     string // the error; "" for none
		wrote    string // -o after, "" for as it was
	}{
		{"good", "good", false, "", "a\nb\n"},
		{"fails late", "late", false, "late: line 3: broken", ""},
		{"nothing written", "skipped", false, "no pair written: 2 entries skipped, and nothing else to write (see above)", ""},
		{"empty input", "empty", false, "no pair written: the input holds none", ""},
		{"--strict", "good", true, "--strict: 1 entry could not be converted", ""},
		{"--strict, never traffic", "gone", true, "", "a\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, before := range []string{"", "the previous file\n"} {
				outDir := t.TempDir()
				out := filepath.Join(outDir, "t.jsonl")
				if before != "" {
					os.WriteFile(out, []byte(before), 0o644)
				}
				r := runJob(fake(false), Job{Inputs: []string{filepath.Join(dir, c.in)}, Output: out, Strict: c.strict}, "")
				if c.want == "" && r.err != nil || c.want != "" && (r.err == nil || !strings.HasSuffix(r.err.Error(), c.want)) {
					t.Errorf("got %v, want %q", r.err, c.want)
				}
				got, err := os.ReadFile(out)
				want := c.wrote
				if want == "" {
					want = before
				}
				if want == "" && !os.IsNotExist(err) || want != "" && string(got) != want {
					t.Errorf("-o after: %q, %v; want %q", got, err, want)
				}
				if left, _ := filepath.Glob(filepath.Join(outDir, ".*tmp")); len(left) > 0 {
					t.Errorf("temporary files left: %q", left)
				}
			}
		})
	}
}

// TestImportStderr: one summary line, then the skips: the first five with
// their place, the count of the rest.
func TestImportStderr(t *testing.T) {
	var in strings.Builder
	in.WriteString("pair a\n")
	for i := range 7 {
		fmt.Fprintf(&in, "skip reason %d\n", i)
	}
	r := runJob(fake(false), Job{Inputs: []string{"-"}}, in.String())
	want := "replay: 1 pairs written\nreplay: skipped 7 entries:\n  entry 2: reason 0\n  entry 3: reason 1\n  entry 4: reason 2\n  entry 5: reason 3\n  entry 6: reason 4\n  ... and 2 more\n"
	if r.err != nil || r.stderr != want || r.stdout != "a\n" {
		t.Errorf("got %v, stdout %q, stderr:\n%s\nwant:\n%s", r.err, r.stdout, r.stderr, want)
	}
}

// TestImportSkippedFile: --skipped gets every skip as a JSON line, the
// file first when several were read; it is complete even when the import
// then fails (nothing written, --strict), not after a conversion error;
// it goes to standard output only when the pairs do not.
func TestImportSkippedFile(t *testing.T) {
	dir := t.TempDir()
	files(t, dir, map[string]string{"a": "pair x\nskip odd \"quoted\"\n", "b": "skip b's\n", "late": "skip one\nfail\n"})
	a, b, late := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "late")
	for _, c := range []struct {
		name    string
		imp     Importer
		ins     []string
		strict  bool
		wantErr string
		want    string // --skipped after; "-" for no file
	}{
		{"one file", fake(false), []string{a}, false, "", `{"index":2,"reason":"odd \"quoted\""}` + "\n"},
		{"several files", fake(true), []string{a, b}, false, "", `{"file":"` + a + `","index":2,"reason":"odd \"quoted\""}` + "\n" + `{"file":"` + b + `","index":1,"reason":"b's"}` + "\n"},
		{"nothing written", fake(false), []string{b}, false, "no pair written", `{"index":1,"reason":"b's"}` + "\n"},
		{"--strict", fake(false), []string{a}, true, "--strict: 1 entry", `{"index":2,"reason":"odd \"quoted\""}` + "\n"},
		{"conversion error", fake(false), []string{late}, false, "line 2: broken", "-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, sk := filepath.Join(t.TempDir(), "t.jsonl"), filepath.Join(t.TempDir(), "skipped.jsonl")
			r := runJob(c.imp, Job{Inputs: c.ins, Output: out, Skipped: sk, Strict: c.strict}, "")
			if c.wantErr == "" && r.err != nil || c.wantErr != "" && (r.err == nil || !strings.Contains(r.err.Error(), c.wantErr)) {
				t.Errorf("got %v, want %q", r.err, c.wantErr)
			}
			got, err := os.ReadFile(sk)
			if c.want == "-" && !os.IsNotExist(err) || c.want != "-" && string(got) != c.want {
				t.Errorf("--skipped: %q (%v), want %q", got, err, c.want)
			}
			for _, line := range strings.SplitAfter(string(got), "\n") {
				if line != "" && !json.Valid([]byte(line)) {
					t.Errorf("--skipped line %q is no JSON", line)
				}
			}
		})
	}
	r := runJob(fake(false), Job{Inputs: []string{a}, Skipped: "-"}, "")
	if r.err == nil || r.err.Error() != "--skipped -: standard output carries the pairs; give --skipped a file, or -o" || r.stdout != "" {
		t.Errorf("--skipped - without -o: %v, stdout %q", r.err, r.stdout)
	}
	out := filepath.Join(t.TempDir(), "t.jsonl")
	r = runJob(fake(false), Job{Inputs: []string{a}, Output: out, Skipped: "-"}, "")
	if r.err != nil || r.stdout != `{"index":2,"reason":"odd \"quoted\""}`+"\n" {
		t.Errorf("--skipped - with -o: %v, stdout %q", r.err, r.stdout)
	}
}

// TestImportInputs: the files named, expanded and checked before any is
// opened.
func TestImportInputs(t *testing.T) {
	dir := t.TempDir()
	files(t, dir, map[string]string{"r_0": "pair 0\n", "r_1": "pair 1\n", "x": "pair x\n"})
	r0, r1 := filepath.Join(dir, "r_0"), filepath.Join(dir, "r_1")
	for _, c := range []struct {
		name    string
		imp     Importer
		ins     []string
		out     string
		want    string // the error, or the pairs written
		wantErr bool
	}{
		{"a glob the shell left", fake(true), []string{filepath.Join(dir, "r_*")}, "", "0\n1\n", false},
		{"no file matches", fake(true), []string{filepath.Join(dir, "*.nothing")}, "", "*.nothing: no file matches", true},
		{"a bad pattern", fake(true), []string{filepath.Join(dir, "[")}, "", "syntax error in pattern", true},
		{"given twice", fake(true), []string{r0, filepath.Join(dir, "r_?")}, "", r0 + ": given twice (as " + r0 + " too)", true},
		{"given twice, spelled otherwise", fake(true), []string{r1, filepath.Join(dir, ".", "r_1")}, "", "given twice", true},
		{"standard input with files", fake(true), []string{"-", r0}, "", "- (standard input) is read alone, not with other files", true},
		{"none", fake(false), nil, "", "name the file to import (an argument, or -f; - for standard input)", true},
		{"two for one", fake(false), []string{r0, r1}, "", "give the file once: as an argument or with -f", true},
		{"-o is the input", fake(false), []string{r0}, r0, "-o " + r0 + ": the same file as -f " + r0, true},
		{"missing", fake(false), []string{filepath.Join(dir, "missing")}, "", "no such file or directory", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runJob(c.imp, Job{Inputs: c.ins, Output: c.out}, "")
			switch {
			case c.wantErr && (r.err == nil || !strings.Contains(r.err.Error(), c.want)):
				t.Errorf("got %v, want an error with %q", r.err, c.want)
			case !c.wantErr && (r.err != nil || r.stdout != c.want):
				t.Errorf("got %v, stdout %q, want %q", r.err, r.stdout, c.want)
			}
		})
	}
}

// TestImportCheck: the importer's own check runs once the files are known
// to be distinct, before any is opened.
func TestImportCheck(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	files(t, dir, map[string]string{"in": "pair a\n"})
	imp := fake(false)
	imp.Check = func() error { return errors.New("--format: no") }
	if r := runJob(imp, Job{Inputs: []string{in}, Output: in}, ""); r.err == nil || !strings.Contains(r.err.Error(), "the same file as") {
		t.Errorf("-o the input, a bad flag: %v, want the files refused first", r.err)
	}
	if r := runJob(imp, Job{Inputs: []string{filepath.Join(dir, "missing")}}, ""); r.err == nil || r.err.Error() != "--format: no" {
		t.Errorf("a missing input, a bad flag: %v, want the flag refused first", r.err)
	}
}

// TestImportNamesTheOtherImport: an import that converts nothing from a
// file of another format says which import reads it, in one sentence
// after its error; a file of its own format, or of none known, gets no
// such sentence.
func TestImportNamesTheOtherImport(t *testing.T) {
	const (
		harFile = "../har/testdata/browser.har"
		gorFile = "../gor/testdata/capture.gor.gz"
		logFile = "../accesslog/testdata/nginx-json.log"
	)
	harData, err := os.ReadFile(harFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		imp   Importer
		in    string
		stdin string
		want  string // the sentence; "" for none
	}{
		{"a capture to import har", HAR(), gorFile, "", gorFile + " is a GoReplay capture: use replay import gor"},
		{"an access log to import har", HAR(), logFile, "", logFile + " is an access log (json): use replay import access-log --format json"},
		{"a HAR to import gor", Gor(), harFile, "", harFile + " is a HAR file: use replay import har"},
		{"a HAR to import access-log", AccessLog(&AccessLogFlags{}), harFile, "", harFile + " is a HAR file: use replay import har"},
		{"a HAR on standard input", Gor(), "-", string(harData), "standard input is a HAR file: use replay import har"},
		{"a HAR piped to import access-log", AccessLog(&AccessLogFlags{}), "pipe", string(harData), "standard input is a HAR file: use replay import har"},
		{"a traffic file", Gor(), "../rrpair/testdata/speedscale.jsonl", "", ""},
		{"its own format, cut short", HAR(), "../har/testdata/truncated-postdata.har", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			job := Job{Inputs: []string{c.in}, Stdin: strings.NewReader(c.stdin), Stdout: &out, Stderr: &errb}
			if c.in == "pipe" {
				job.Inputs = []string{"-"}
				job.Stdin = io.MultiReader(strings.NewReader(c.stdin)) // no Seek: kept as it passes
			}
			err := Import(c.imp, job)
			if err == nil {
				t.Fatalf("no error; stderr:\n%s", errb.String())
			}
			msg := err.Error()
			first, sentence, _ := strings.Cut(msg, "\n")
			switch {
			case c.want == "" && sentence != "":
				t.Errorf("got %q, want no sentence after %q", msg, first)
			case c.want != "" && sentence != c.want:
				t.Errorf("got %q, want %q after the error", msg, c.want)
			}
		})
	}
}
