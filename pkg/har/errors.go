package har

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// errEOF is a HAR that ends before its JSON does.
var errEOF = errors.New("unexpected end of file")

// fail turns err, met reading the value at path that follows offset mark,
// into a ParseError with the line, column and HAR path of the fault. The
// decoder's offsets do not say where a fault is (a token's are from the
// stream's start, a value's from its own), so the value is read again on
// its own, from where it starts, and walked to the fault. Errors of
// reading (I/O) come back as they are.
func (s *scan) fail(err error, mark int64, path string) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF), err == io.EOF:
	default:
		return err
	}
	br := bufio.NewReader(s.r)
	start, serr := valueStart(s.r, br, mark)
	if serr != nil {
		return err
	}
	at, cause := start, err // what follows a whole value is at fault: where it starts
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		cause = errEOF
	}
	if _, serr := s.r.Seek(start, io.SeekStart); serr == nil {
		br.Reset(s.r)
		var raw json.RawMessage
		derr := json.NewDecoder(br).Decode(&raw)
		var se2 *json.SyntaxError
		switch {
		case errors.As(derr, &se2):
			at, cause = start+se2.Offset-1, se2
		case derr == io.EOF || errors.Is(derr, io.ErrUnexpectedEOF):
			if end, serr := s.r.Seek(0, io.SeekEnd); serr == nil {
				at, cause = end, errEOF
			}
		}
	}
	if at > start {
		if _, serr := s.r.Seek(start, io.SeekStart); serr == nil {
			path += walkPath(io.LimitReader(bufio.NewReader(s.r), at-start), -1)
		}
	}
	return s.parseError(at, path, cause)
}

// errorAt is a ParseError for the value at path that follows offset mark.
func (s *scan) errorAt(mark int64, path string, err error) error {
	start, serr := valueStart(s.r, bufio.NewReader(s.r), mark)
	if serr != nil {
		return err
	}
	return s.parseError(start, path, err)
}

// parseError is a ParseError at offset at of s.r.
func (s *scan) parseError(at int64, path string, err error) error {
	line, col, lerr := s.lineCol(at)
	if lerr != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return &ParseError{Line: line, Column: col, Path: path, Err: err}
}

// lineCol is the line and column (in characters), from 1, of offset at
// of s.r, counted from where the JSON starts.
func (s *scan) lineCol(at int64) (line, col int, err error) {
	if _, err := s.r.Seek(s.base, io.SeekStart); err != nil {
		return 0, 0, err
	}
	br := bufio.NewReader(io.LimitReader(s.r, at-s.base))
	line, col = 1, 1
	for {
		c, err := br.ReadByte()
		if err != nil {
			return line, col, nil
		}
		switch {
		case c == '\n':
			line, col = line+1, 1
		case c&0xc0 != 0x80: // not a UTF-8 continuation byte
			col++
		}
	}
}

// frame is a container open on the walk: an array with the index of the
// element being read, or an object with its key.
type frame struct {
	array     bool
	index     int
	key       string
	expectKey bool
}

// walkPath walks the JSON value read from rd and returns the HAR path,
// from the value ("", ".request.postData", "[3].value"), of the value
// whose end is at offset off or after, or with off < 0 of where the input
// ends or breaks.
func walkPath(rd io.Reader, off int64) string {
	dec := json.NewDecoder(rd)
	var stack []frame
	for {
		t, err := dec.Token()
		if err != nil {
			return render(stack)
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if k, ok := t.(string); ok && top != nil && !top.array && top.expectKey {
			top.key, top.expectKey = k, false
			continue
		}
		if d, ok := t.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			done(stack)
			continue
		}
		if off >= 0 && dec.InputOffset() >= off {
			return render(stack)
		}
		if d, ok := t.(json.Delim); ok {
			stack = append(stack, frame{array: d == '[', expectKey: d == '{'})
			continue
		}
		done(stack)
	}
}

// done moves the innermost container past the value just read.
func done(stack []frame) {
	if len(stack) == 0 {
		return
	}
	top := &stack[len(stack)-1]
	if top.array {
		top.index++
	} else {
		top.expectKey = true
	}
}

func render(stack []frame) string {
	var b strings.Builder
	for _, f := range stack {
		switch {
		case f.array:
			fmt.Fprintf(&b, "[%d]", f.index)
		case !f.expectKey:
			b.WriteString("." + f.key)
		}
	}
	return b.String()
}

// pathAt is the HAR path, from raw, of the value of raw that ends at
// offset off or after.
func pathAt(raw []byte, off int64) string {
	return walkPath(strings.NewReader(string(raw)), off)
}

// want says what JSON a Go type reads, for a message.
func want(te *json.UnmarshalTypeError) string {
	if te.Type == nil {
		return "another type"
	}
	switch te.Type.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Bool:
		return "true or false"
	}
	return te.Type.String()
}

// got says what JSON was found, from UnmarshalTypeError.Value.
func got(v string) string {
	kind, detail, _ := strings.Cut(v, " ")
	switch kind {
	case "object":
		return "an object"
	case "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "number":
		if detail != "" {
			return "the number " + detail
		}
		return "a number"
	}
	return v
}
