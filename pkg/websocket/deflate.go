package websocket

import (
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Deflate is the permessage-deflate extension (RFC 7692) as the server's
// 101 answer negotiated it (Sec-WebSocket-Extensions). The zero value is
// "not negotiated".
type Deflate struct {
	Enabled bool
	// ClientNoContextTakeover: the client resets its compression context
	// after every message; ServerNoContextTakeover likewise the server.
	ClientNoContextTakeover, ServerNoContextTakeover bool
	// ClientMaxWindowBits and ServerMaxWindowBits are the LZ77 window each
	// side compresses with, 8 to 15; 0 when the answer does not say (15).
	ClientMaxWindowBits, ServerMaxWindowBits int
}

// NoContextTakeover says whether the sender resets its context after each
// message, so that each of its messages inflates on its own.
func (d Deflate) NoContextTakeover(s Sender) bool {
	if s == Client {
		return d.ClientNoContextTakeover
	}
	return d.ServerNoContextTakeover
}

// String is the extension as a Sec-WebSocket-Extensions value, or "" when
// not enabled.
func (d Deflate) String() string {
	if !d.Enabled {
		return ""
	}
	var b strings.Builder
	b.WriteString("permessage-deflate")
	if d.ClientNoContextTakeover {
		b.WriteString("; client_no_context_takeover")
	}
	if d.ServerNoContextTakeover {
		b.WriteString("; server_no_context_takeover")
	}
	if d.ClientMaxWindowBits != 0 {
		b.WriteString("; client_max_window_bits=" + strconv.Itoa(d.ClientMaxWindowBits))
	}
	if d.ServerMaxWindowBits != 0 {
		b.WriteString("; server_max_window_bits=" + strconv.Itoa(d.ServerMaxWindowBits))
	}
	return b.String()
}

// ParseExtensions reads the extensions a server's 101 answer accepted: the
// values of its Sec-WebSocket-Extensions headers (one or several, each a
// comma-separated list). It returns permessage-deflate's parameters when
// the answer names it; other extensions are left alone (their reserved
// bits stay a protocol error for the Reader). An error names the parameter
// and what was expected: an unknown parameter of permessage-deflate, a
// window size outside 8-15, a parameter given twice, or permessage-deflate
// accepted twice.
func ParseExtensions(values ...string) (Deflate, error) {
	var d Deflate
	for _, v := range values {
		for ext := range strings.SplitSeq(v, ",") {
			params := strings.Split(ext, ";")
			if !strings.EqualFold(strings.TrimSpace(params[0]), "permessage-deflate") {
				continue
			}
			if d.Enabled {
				return Deflate{}, fmt.Errorf("Sec-WebSocket-Extensions: permessage-deflate accepted twice; an answer accepts it once")
			}
			d.Enabled = true
			if err := d.parseParams(params[1:]); err != nil {
				return Deflate{}, err
			}
		}
	}
	return d, nil
}

func (d *Deflate) parseParams(params []string) error {
	seen := map[string]bool{}
	for _, p := range params {
		name, value, hasValue := strings.Cut(strings.TrimSpace(p), "=")
		name = strings.ToLower(strings.TrimSpace(name))
		value = strings.Trim(strings.TrimSpace(value), `"`)
		if name == "" {
			continue
		}
		if seen[name] {
			return fmt.Errorf("Sec-WebSocket-Extensions: permessage-deflate parameter %s given twice; expected once", name)
		}
		seen[name] = true
		switch name {
		case "client_no_context_takeover", "server_no_context_takeover":
			if hasValue {
				return fmt.Errorf("Sec-WebSocket-Extensions: permessage-deflate parameter %s has a value %q; expected none", name, value)
			}
			if name == "client_no_context_takeover" {
				d.ClientNoContextTakeover = true
			} else {
				d.ServerNoContextTakeover = true
			}
		case "client_max_window_bits", "server_max_window_bits":
			bits := 15
			if hasValue {
				n, err := strconv.Atoi(value)
				if err != nil || n < 8 || n > 15 {
					return fmt.Errorf("Sec-WebSocket-Extensions: permessage-deflate parameter %s=%q; expected a number of 8 to 15", name, value)
				}
				bits = n
			} else if name == "server_max_window_bits" {
				return fmt.Errorf("Sec-WebSocket-Extensions: permessage-deflate parameter server_max_window_bits has no value; expected a number of 8 to 15")
			}
			if name == "client_max_window_bits" {
				d.ClientMaxWindowBits = bits
			} else {
				d.ServerMaxWindowBits = bits
			}
		default:
			return fmt.Errorf("Sec-WebSocket-Extensions: unknown permessage-deflate parameter %q; expected client_no_context_takeover, server_no_context_takeover, client_max_window_bits or server_max_window_bits", name)
		}
	}
	return nil
}

// ErrContextLost is a compressed message that cannot be inflated because
// an earlier compressed message of the same side was skipped (over the
// bound) while the side keeps its compression context across messages.
var ErrContextLost = errors.New("websocket: compressed message after one skipped over the bound: the compression context is lost")

// windowSize is the largest LZ77 window DEFLATE uses: a dictionary of this
// many bytes of earlier output covers every back reference a compressor
// with any max_window_bits can make.
const windowSize = 1 << 15

// deflateTail ends a message's compressed bytes: the 0x00 0x00 0xff 0xff
// the sender removed (RFC 7692 section 7.2.2), then an empty final stored
// block, so that the inflater ends cleanly at the message's end.
var deflateTail = []byte{0x00, 0x00, 0xff, 0xff, 0x01, 0x00, 0x00, 0xff, 0xff}

// inflater inflates one side's compressed messages. With context takeover
// the side's compressor keeps its window across messages, so the inflater
// starts each message with the last 32 KiB of the side's earlier output as
// its dictionary. Its buffers are kept between messages.
type inflater struct {
	takeover bool
	fr       io.ReadCloser
	src      twoReader
	window   []byte
	out      []byte
	// lost: a compressed message of a side that keeps its context was
	// skipped, so its later messages refer to bytes the inflater never saw.
	lost bool
}

// twoReader reads a, then b: a message's bytes then deflateTail, without
// the allocation of io.MultiReader.
type twoReader struct{ a, b []byte }

func (t *twoReader) Read(p []byte) (int, error) {
	if len(t.a) > 0 {
		n := copy(p, t.a)
		t.a = t.a[n:]
		return n, nil
	}
	if len(t.b) > 0 {
		n := copy(p, t.b)
		t.b = t.b[n:]
		return n, nil
	}
	return 0, io.EOF
}

// inflate returns the message's payload inflated, in a buffer the inflater
// reuses (valid until the next call). Over limit bytes it keeps no more of
// the payload and returns a *TooLargeError once the message is inflated to
// its end, so that the side's context (its window) stays whole for the
// messages after it; a payload that does not inflate is a *ProtocolError
// (1007). Once a compressed message was skipped unread (lost), a side that
// keeps its context cannot be followed: its later compressed messages are
// ErrContextLost.
func (f *inflater) inflate(op Opcode, in []byte, limit int64) ([]byte, error) {
	if f.lost {
		return nil, ErrContextLost
	}
	f.src = twoReader{a: in, b: deflateTail}
	var dict []byte
	if f.takeover {
		dict = f.window
	}
	if f.fr == nil {
		f.fr = flate.NewReaderDict(&f.src, dict)
	} else if err := f.fr.(flate.Resetter).Reset(&f.src, dict); err != nil {
		return nil, &ProtocolError{Code: CloseInvalidPayload, Reason: "compressed message: " + err.Error()}
	}
	size, err := f.readAll(limit)
	if err != nil {
		f.lost = f.takeover
		return nil, &ProtocolError{Code: CloseInvalidPayload, Reason: "compressed message does not inflate: " + err.Error()}
	}
	if f.takeover {
		f.keep(f.out)
	}
	if size > limit {
		return nil, &TooLargeError{Opcode: op, Size: size, Limit: limit, Inflated: true}
	}
	return f.out, nil
}

// readAll inflates the message to its end into f.out and returns its
// size. Past limit bytes f.out keeps no more of it: each buffer's worth
// goes to the window (with takeover) and the buffer is used again.
func (f *inflater) readAll(limit int64) (size int64, err error) {
	if cap(f.out) == 0 {
		f.out = make([]byte, 0, 4096)
	}
	f.out = f.out[:0]
	for {
		if len(f.out) == cap(f.out) {
			f.makeRoom(size > limit)
		}
		n, err := f.fr.Read(f.out[len(f.out):cap(f.out)])
		f.out = f.out[:len(f.out)+n]
		if size <= limit && size+int64(n) > limit {
			f.makeRoom(true) // over the bound now: what was kept goes
		}
		size += int64(n)
		if err == io.EOF {
			return size, nil
		}
		if err != nil {
			return size, err
		}
	}
}

// makeRoom makes room in a full f.out: past the bound (over) by giving
// its bytes to the window and emptying it, else by growing it.
func (f *inflater) makeRoom(over bool) {
	if !over {
		f.out = append(f.out, 0)[:len(f.out)]
		return
	}
	if f.takeover {
		f.keep(f.out)
	}
	f.out = f.out[:0]
}

// keep appends output to the window, which holds the last windowSize bytes.
func (f *inflater) keep(out []byte) {
	if len(out) >= windowSize {
		f.window = append(f.window[:0], out[len(out)-windowSize:]...)
		return
	}
	if drop := len(f.window) + len(out) - windowSize; drop > 0 {
		f.window = f.window[:copy(f.window, f.window[drop:])]
	}
	f.window = append(f.window, out...)
}
