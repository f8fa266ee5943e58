package convert

import (
	"errors"
	"fmt"
	"io"

	"github.com/replay-dev/replay/internal/outfile"
)

// Output is a converting command's output (-o, --skipped): a file written
// whole or not at all (internal/outfile: to a temporary file, renamed
// over the file asked for by Commit), or standard output, written as it
// goes. A command that fails, however late, Aborts: the file asked for
// stays as it was.
type Output struct {
	w    io.Writer
	flag string
	file *outfile.File // nil for standard output
}

// Create opens the output that flag names at path; "" and "-" are
// stdout.
func Create(flag, path string, stdout io.Writer) (*Output, error) {
	if path == "" || path == "-" {
		return &Output{w: stdout, flag: flag}, nil
	}
	f, err := outfile.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return &Output{w: f, flag: flag, file: f}, nil
}

func (o *Output) Write(b []byte) (int, error) { return o.w.Write(b) }

// Commit puts the file in place (standard output: nothing to do). It may
// be called again, and after Abort: then it does nothing.
func (o *Output) Commit() error {
	if o.file == nil {
		return nil
	}
	if err := o.file.Commit(); err != nil {
		return fmt.Errorf("%s: %w", o.flag, err)
	}
	return nil
}

// Abort drops the file: the file asked for stays as it was. It does
// nothing after Commit.
func (o *Output) Abort() {
	if o.file != nil {
		o.file.Abort()
	}
}

// Finish ends a conversion that wrote outs: it says summary on stderr, in
// one line, then what sk holds, and puts outs in place, in order, unless
// --strict (strict) refuses a skip: then the previous files stay (the
// caller Aborts them), rather than be replaced by files that lack what was
// skipped. The exports end so.
func Finish(stderr io.Writer, summary string, sk *SkipLog, strict bool, outs ...*Output) error {
	fmt.Fprintf(stderr, "replay: %s\n", summary)
	if err := sk.Report(stderr, strict); err != nil {
		return err
	}
	var errs []error
	for _, o := range outs {
		errs = append(errs, o.Commit())
	}
	return errors.Join(errs...)
}
