// Package sniff tells what a file is from its first bytes, and which
// import converts it: the one place that asks every format package "is
// this yours?" (pcap.Looks, har.Looks, gor.Looks, accesslog.Looks). It sits above the
// format packages, which never import it. Its users are the commands
// that are given a file of the wrong kind: inspect and run name the
// import to use instead of a JSON error on line 1, and an import that
// fails on a file of another format names the right one.
//
// A new importer plugs in with a Looks in its package (a few bytes of
// magic, or a first line it recognizes) and a case in Sniff, before the
// formats that guess from looser signs (an access log's first line).
package sniff

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"

	"github.com/replay-dev/replay/pkg/accesslog"
	"github.com/replay-dev/replay/pkg/gor"
	"github.com/replay-dev/replay/pkg/har"
	"github.com/replay-dev/replay/pkg/pcap"
)

// Size is how many of a file's first bytes the sniffer reads: 64 KiB, and
// as many again of a gzip-compressed file's uncompressed start.
const Size = 64 << 10

// Format is what a file's first bytes say it is.
type Format struct {
	// Import is the import subcommand that converts it ("har", "gor",
	// "access-log", "pcap"); "" when no import does.
	Import string
	// Flags are the flags that import needs for it: "--format json".
	Flags string
	// What names the format in a sentence: "a HAR file", "an access log
	// (combined)".
	What string
	// Gzip says the bytes are gzip-compressed.
	Gzip bool
}

// Command is the command that converts the file, flags included:
// "import access-log --format json".
func (f Format) Command() string {
	if f.Flags == "" {
		return "import " + f.Import
	}
	return "import " + f.Import + " " + f.Flags
}

// Sniff says what head, a file's first bytes (Size of them, or all of a
// shorter file), is. A HAR is recognized as it is (import har does not
// read gzip); a packet capture, a GoReplay capture and an access log
// compressed or not; a byte-order mark is passed over.
func Sniff(head []byte) Format {
	gz := gzipped(head)
	if format, ok := pcap.Looks(head); ok {
		return Format{Import: "pcap", What: "a packet capture (" + format + ")", Gzip: gz}
	}
	switch {
	case har.Looks(head):
		return Format{Import: "har", What: "a HAR file", Gzip: gz}
	case gor.Looks(head):
		return Format{Import: "gor", What: "a GoReplay capture", Gzip: gz}
	}
	plain := head
	if gz {
		zr, err := gzip.NewReader(bytes.NewReader(head))
		if err != nil {
			return Format{}
		}
		plain = make([]byte, Size)
		n, _ := io.ReadFull(zr, plain)
		plain = plain[:n]
	}
	line, _, _ := bytes.Cut(bytes.TrimPrefix(plain, bom), []byte("\n"))
	if format, ok := accesslog.Looks(line); ok {
		return accessLog(format, gz)
	}
	return Format{Gzip: gz}
}

// accessLog is an access log of format, as accesslog.Looks names it:
// "custom" needs the log_format string, which only the user knows.
func accessLog(format string, gz bool) Format {
	f := Format{Import: "access-log", What: "an access log (" + format + ")", Gzip: gz}
	switch format {
	case "json":
		f.Flags = "--format json"
	case "custom":
		f.Flags = "--format 'its log_format string'"
		f.What = "an access log (a custom log_format)"
	}
	return f
}

var bom = []byte("\xef\xbb\xbf")

func gzipped(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// Hint says which import converts the file called name, whose first bytes
// are head, when it is a format an import reads rather than a traffic file
// (RRPair JSON Lines); a gzip-compressed file of no such format is told to
// be gunzipped; else "". For a command that wanted a traffic file.
func Hint(name string, head []byte) string {
	f := Sniff(head)
	switch {
	case f.Import != "":
		return fmt.Sprintf("%s is %s, not a traffic file (RRPair JSON Lines): convert it first: replay %s %s -o traffic.jsonl", name, f.What, f.Command(), name)
	case f.Gzip:
		return fmt.Sprintf("%s is gzip-compressed: replay reads traffic files uncompressed (gunzip it first); import gor, import access-log and import pcap read .gz files as they are", name)
	}
	return ""
}

// Head reads the first Size bytes of the file at path (fewer when it is
// shorter); nil when it cannot be read or is no regular file: a pipe
// named by a path is not opened again, for its data is gone and the open
// could wait for a writer that never comes.
func Head(path string) []byte {
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	return readHead(f)
}

func readHead(r io.Reader) []byte {
	head := make([]byte, Size)
	n, _ := io.ReadFull(r, head)
	return head[:n]
}

// Keep returns the reader to read r through, and a function that returns
// r's first Size bytes once the reading is done, so that an input read
// once (standard input) can still be sniffed after it failed to convert.
// When r can seek, it is read as it is (a converter may seek it too) and
// the first bytes are read again from where r stood; otherwise (a pipe)
// they are kept as they pass.
func Keep(r io.Reader) (through io.Reader, head func() []byte) {
	if s, ok := r.(io.ReadSeeker); ok {
		if at, err := s.Seek(0, io.SeekCurrent); err == nil {
			return r, func() []byte {
				if _, err := s.Seek(at, io.SeekStart); err != nil {
					return nil
				}
				return readHead(s)
			}
		}
	}
	k := &keeper{r: r}
	return k, func() []byte { return k.head }
}

// keeper passes reads through and keeps the first Size bytes read.
type keeper struct {
	r    io.Reader
	head []byte
}

func (k *keeper) Read(b []byte) (int, error) {
	n, err := k.r.Read(b)
	if room := Size - len(k.head); room > 0 {
		k.head = append(k.head, b[:min(n, room)]...)
	}
	return n, err
}
