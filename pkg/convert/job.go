package convert

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/internal/plural"
	"github.com/replay-dev/replay/pkg/sniff"
)

// Importer is what the import job knows of one importer.
type Importer struct {
	// Name is the import subcommand, as the sniffer names it ("har"):
	// an input the sniffer takes for another importer's is named so.
	Name string
	// What is what the converter numbers in its skips: "entry",
	// "record", "line", "packet".
	What string
	// Item is what a skip is, when it is not one What ("item": a packet
	// capture's skips are messages and connections, each placed by the
	// packet it began in); "": What.
	Item string
	// Several says the importer reads several inputs into one output (and
	// expands the glob patterns a shell left); else it reads one.
	Several bool
	// Check checks the importer's own options once the files named are
	// known to be distinct, before any is opened; nil: nothing to check.
	Check func() error
	// Convert converts ins (one, unless Several) to w, logging what it
	// skips in sk.
	Convert func(ins []Input, w io.Writer, sk *SkipLog) (Result, error)
}

// SkipNoun is what one skip of the importer is called: Item, else What.
func (imp Importer) SkipNoun() string {
	if imp.Item != "" {
		return imp.Item
	}
	return imp.What
}

// Input is one input of an import: its name, as given (a path, or
// "standard input"), for messages, and its bytes.
type Input struct {
	Name string
	R    io.Reader
	head func() []byte // its first bytes, for the sniffer
}

// Result is what a converter says it did.
type Result struct {
	// Summary is the line said on stderr: what was written and skipped
	// (the format package's Stats.Summary).
	Summary string
	// Written counts the pairs written: none is an error.
	Written int
	// NothingWritten says why none was, when the converter knows better
	// than its skips ("none of the 3 lines holds an HTTP request"); "":
	// the skips, or an empty input, say it.
	NothingWritten string
}

// Job is one run of an import, as the command line gave it.
type Job struct {
	// Inputs are the files named (-f first, then the arguments): paths,
	// glob patterns a shell did not expand (Several), or "-" (standard
	// input, alone).
	Inputs []string
	// Output (-o) gets the pairs, whole or not at all; "" or "-":
	// Stdout, written as it goes.
	Output string
	// Skipped (--skipped) gets every skip as a JSON line, whole; "": none,
	// "-": Stdout, when the pairs go to a file.
	Skipped string
	// Strict (--strict) fails the import when an item was skipped that
	// held traffic.
	Strict bool
	Stdin  io.Reader
	// Stdout gets the pairs (or the skips) sent to standard output;
	// Stderr, the summary line and the skips.
	Stdout, Stderr io.Writer
}

// Import runs job with imp: it checks the files named (inputs expanded,
// no output the same file as an input), converts the inputs to the
// output, says on stderr the summary and what was skipped, and puts the
// output in place only when the import succeeded: never after an error,
// however late, nor when no pair was written, nor when --strict refused a
// skip. The skips file is put in place whenever the converter read its
// inputs to the end, so that it explains such a failure. When the inputs
// failed to convert, or gave no pair, and the sniffer takes one for
// another importer's format, the error names that import.
func Import(imp Importer, job Job) error {
	names, err := imp.inputs(job.Inputs)
	if err != nil {
		return err
	}
	if err := job.checkFiles(names); err != nil {
		return err
	}
	if imp.Check != nil {
		if err := imp.Check(); err != nil {
			return err
		}
	}
	ins, closeIns, err := open(names, job.Stdin)
	if err != nil {
		return err
	}
	defer closeIns()
	return imp.run(ins, job)
}

// inputs are the files an import reads, from the names given.
func (imp Importer) inputs(names []string) ([]string, error) {
	switch {
	case len(names) == 0:
		return nil, errors.New("name the file to import (an argument, or -f; - for standard input)")
	case imp.Several:
		return expand(names)
	case len(names) > 1:
		return nil, errors.New("give the file once: as an argument or with -f")
	}
	return names, nil
}

// expand expands the glob patterns among names that name no file (a
// shell that did not expand them, or quotes), and refuses a file given
// twice and standard input among other files.
func expand(names []string) ([]string, error) {
	var files []string
	for _, name := range names {
		if _, err := os.Stat(name); err == nil || name == "-" || !strings.ContainsAny(name, "*?[") {
			files = append(files, name)
			continue
		}
		matches, err := filepath.Glob(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%s: no file matches", name)
		}
		files = append(files, matches...)
	}
	for i, a := range files {
		if a == "-" && len(files) > 1 {
			return nil, errors.New("- (standard input) is read alone, not with other files")
		}
		for _, b := range files[:i] {
			if outfile.SameFile(a, b) {
				return nil, fmt.Errorf("%s: given twice (as %s too)", a, b)
			}
		}
	}
	return files, nil
}

// checkFiles refuses outputs that are inputs or each other, and skips
// on the standard output that carries the pairs.
func (job *Job) checkFiles(names []string) error {
	paths := []outfile.Named{outfile.Out("-o", job.Output), outfile.Out("--skipped", job.Skipped)}
	for _, name := range names {
		paths = append(paths, outfile.In("-f", name))
	}
	if job.Skipped == "-" && (job.Output == "" || job.Output == "-") {
		return errors.New("--skipped -: standard output carries the pairs; give --skipped a file, or -o")
	}
	return outfile.CheckDistinct(paths)
}

// open opens the files named ("-": stdin); closeAll closes them. Each
// input keeps the way to its first bytes, for the sniffer.
func open(names []string, stdin io.Reader) (ins []Input, closeAll func(), err error) {
	var files []*os.File
	closeAll = func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, name := range names {
		r, shown := stdin, "standard input"
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			files = append(files, f)
			r, shown = f, name
		}
		through, head := sniff.Keep(r)
		ins = append(ins, Input{Name: shown, R: through, head: head})
	}
	return ins, closeAll, nil
}

// run converts ins as job says, once the files are checked and open.
func (imp Importer) run(ins []Input, job Job) error {
	sk := NewSkipLog(imp.What)
	sk.item = imp.SkipNoun()
	out, err := Create("-o", job.Output, job.Stdout)
	if err != nil {
		return err
	}
	defer out.Abort()
	skipped, err := job.skipsTo(sk)
	if err != nil {
		return err
	}
	defer skipped.Abort()
	bw := bufio.NewWriterSize(out, 64<<10)
	res, err := imp.Convert(ins, bw, sk)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return imp.otherFormat(named(ins, err), ins)
	}
	fmt.Fprintf(job.Stderr, "replay: %s\n", res.Summary)
	strictErr := sk.Report(job.Stderr, job.Strict)
	if err := skipped.Commit(); err != nil { // complete: the skips explain a failure below
		return err
	}
	if res.Written == 0 {
		return imp.otherFormat(nothingWritten(sk, res.NothingWritten), ins)
	}
	if strictErr != nil {
		return strictErr
	}
	return out.Commit()
}

// skipsTo opens --skipped, when given, for sk to write to; its Commit
// flushes it first.
func (job *Job) skipsTo(sk *SkipLog) (*skipsFile, error) {
	if job.Skipped == "" {
		return &skipsFile{}, nil
	}
	out, err := Create("--skipped", job.Skipped, job.Stdout)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	sk.jsonl = bw
	return &skipsFile{out, bw}, nil
}

// skipsFile is --skipped, buffered; the zero skipsFile is none.
type skipsFile struct {
	out *Output
	bw  *bufio.Writer
}

func (f *skipsFile) Commit() error {
	if f.out == nil {
		return nil
	}
	if err := f.bw.Flush(); err != nil {
		return fmt.Errorf("--skipped: %w", err)
	}
	return f.out.Commit()
}

func (f *skipsFile) Abort() {
	if f.out != nil {
		f.out.Abort()
	}
}

// named prefixes the error of a one-file import with the file's name,
// unless it starts with it: "capture.gor: unexpected EOF".
func named(ins []Input, err error) error {
	if len(ins) == 1 && !strings.HasPrefix(err.Error(), ins[0].Name+":") {
		return fmt.Errorf("%s: %w", ins[0].Name, err)
	}
	return err
}

// nothingWritten is the error of an import that wrote no pair, saying why.
func nothingWritten(sk *SkipLog, why string) error {
	switch {
	case why != "":
	case sk.n > 0:
		why = plural.Count(sk.n, sk.item) + " skipped, and nothing else to write (see above)"
	default:
		why = "the input holds none"
	}
	return fmt.Errorf("no pair written: %s", why)
}

// otherFormat adds to err, the error of an import that converted nothing,
// the import to use when the sniffer takes an input for another
// importer's format: "capture.gor is a GoReplay capture: use replay
// import gor".
func (imp Importer) otherFormat(err error, ins []Input) error {
	for _, in := range ins {
		if in.head == nil {
			continue
		}
		if f := sniff.Sniff(in.head()); f.Import != "" && f.Import != imp.Name {
			return fmt.Errorf("%w\n%s is %s: use replay %s", err, in.Name, f.What, f.Command())
		}
	}
	return err
}
