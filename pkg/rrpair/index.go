package rrpair

import (
	"bytes"
	"runtime"
	"sync"
)

// Validating is most of the cost of opening a file, and lines are
// independent: the file is cut into chunks at line ends, workers (one per
// CPU) decode and check the chunks' lines, and File.index folds the chunk
// results in file order, so that numbering (endpoints, hosts, sessions,
// iterations) and the errors reported are those of one pass from the top.

// chunkSize is the share of the mapping a worker validates at a time: large
// enough to keep workers busy, small enough that the results waiting to be
// folded stay a few MiB.
var chunkSize = 4 << 20 // a variable for tests

// chunk is a run of whole lines and, once done is closed, what validating
// them found.
type chunk struct {
	start, end int // offsets in the mapping
	line       int // number of its first line
	lines      int // newlines in it
	done       chan struct{}
	res        chunkResult
}

// chunkResult is what a worker found in a chunk.
type chunkResult struct {
	errs     []LineError // the first opt.MaxErrors
	errTotal int
	recs     []pairRec // the lines kept, in order; none after an error
	names    []string  // endpoint names, in order of first appearance
	counts   []int     // pairs per name
	hosts    []string  // distinct hosts, in order of first appearance
	filtered int
	skipped  Skipped
	firstTS  int64 // earliest ts of the kept pairs; 0 when none
	cookies  bool  // a recorded response sets a cookie
	tooLong  bool  // a line number past 2^32-1
}

// pairRec is one kept line: pairRef with a chunk-local endpoint, and the
// session it belongs to.
type pairRec struct {
	off      int64
	line     uint32
	endpoint uint32 // index into chunkResult.names
	session  []byte // in the mapping, or copied out of the decoder
	// bodyAt and bodyEnd are where the request body lies in the line
	// when it has escapes (decoder.bodyAt); 0 when it has none.
	bodyAt, bodyEnd int
}

// chunks cuts data into chunks at line ends and numbers their first lines.
func chunks(data []byte) []*chunk {
	var cs []*chunk
	line := 1
	for start := 0; start < len(data); {
		end := min(start+chunkSize, len(data))
		if i := bytes.IndexByte(data[end:], '\n'); i >= 0 {
			end += i + 1
		} else {
			end = len(data)
		}
		c := &chunk{start: start, end: end, line: line, done: make(chan struct{})}
		c.lines = bytes.Count(data[start:end], []byte{'\n'})
		line += c.lines
		cs = append(cs, c)
		start = end
	}
	return cs
}

// validateChunks runs the workers over cs and calls fold with each chunk in
// order as soon as it is done. At most a few chunks' results are held.
func (f *File) validateChunks(cs []*chunk, opt Options, fold func(*chunk)) {
	workers := min(runtime.GOMAXPROCS(0), len(cs))
	work := make(chan *chunk)
	// Folded chunks hand their records back: a large file's records would
	// otherwise be garbage enough to grow the heap well past the index.
	free := make(chan []pairRec, 3*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := validator{f: f, opt: opt, d: decoder{validate: true, signatures: opt.Signatures}, ids: map[string]uint32{}, hostSeen: map[string]bool{}}
			for c := range work {
				select {
				case c.res.recs = <-free:
				default:
				}
				v.run(c)
				close(c.done)
			}
		}()
	}
	// Hand chunks out no further ahead of the fold than twice the workers.
	ahead := make(chan struct{}, 2*workers)
	go func() {
		defer close(work)
		for _, c := range cs {
			ahead <- struct{}{}
			work <- c
		}
	}()
	for _, c := range cs {
		<-c.done
		fold(c)
		select {
		case free <- c.res.recs[:0]:
		default:
		}
		c.res = chunkResult{}
		<-ahead
	}
	wg.Wait()
}

// validator is one worker's state.
type validator struct {
	f        *File
	opt      Options
	d        decoder
	p        Pair
	name     []byte
	lastHost []byte
	ids      map[string]uint32 // endpoint name -> index in the chunk's names
	hostSeen map[string]bool
	sessions []byte // sessions copied out of the decoder
}

// run decodes and checks c's lines.
func (v *validator) run(c *chunk) {
	r := &c.res
	clear(v.ids)
	clear(v.hostSeen)
	v.lastHost = v.lastHost[:0]
	v.sessions = nil // the records of the last chunk still point into it
	data := v.f.data
	line := c.line
	for off := c.start; off < c.end; line++ {
		end := bytes.IndexByte(data[off:c.end], '\n')
		if end < 0 {
			end = c.end
		} else {
			end += off
		}
		text := data[off:end]
		start := off
		off = end + 1
		if isBlank(text) {
			continue
		}
		v.check(r, text, start, line)
	}
}

// check decodes one line, at offset start, and counts it in r: as an
// error, a skipped or filtered line, or a kept record.
func (v *validator) check(r *chunkResult, text []byte, start, line int) {
	p := &v.p
	kind, err := v.d.decode(text, p)
	if err == nil && kind == replayable {
		kind = v.skipOf(p)
	}
	if err == nil && kind == replayable && v.opt.RequireHost && len(p.Req.Host) == 0 {
		err = fieldErr("http.req.host", "missing, and no target was given to send it to")
	}
	if err != nil {
		r.errTotal++
		if len(r.errs) < v.opt.MaxErrors {
			r.errs = append(r.errs, lineError(v.f.name, line, err))
		}
		return
	}
	if r.errTotal > 0 {
		return // only look for more errors
	}
	if kind != replayable {
		r.skipped.count(kind, p.Protocol)
		return
	}
	if line > 1<<32-1 {
		r.tooLong = true
		return
	}
	v.keep(r, start, line)
}

// keep records the replayable pair of a line, unless the filter drops it:
// its endpoint, host, time and session.
func (v *validator) keep(r *chunkResult, start, line int) {
	p := &v.p
	for i := 0; i < len(p.Res.Headers) && !r.cookies; i++ {
		r.cookies = bytes.EqualFold(p.Res.Headers[i].Name, []byte("set-cookie"))
	}
	if len(p.EndpointTag) > 0 {
		v.name = append(v.name[:0], p.EndpointTag...)
	} else {
		v.name = AppendEndpointName(v.name[:0], p.Req.Method, p.Req.URI)
	}
	if v.opt.Filter.active() {
		p.Line = line
		if !v.opt.Filter.keeps(p, v.name) {
			r.filtered++
			return
		}
	}
	id, ok := v.ids[string(v.name)]
	if !ok {
		id = uint32(len(r.names))
		r.names = append(r.names, string(v.name))
		r.counts = append(r.counts, 0)
		v.ids[r.names[id]] = id
	}
	r.counts[id]++
	v.host(r, p.Req.Host)
	if ns, ok := p.UnixNano(); ok && (r.firstTS == 0 || ns < r.firstTS) {
		r.firstTS = ns
	}
	session := p.Session
	if len(session) > 0 && !v.f.inMapping(session) {
		at := len(v.sessions)
		v.sessions = append(v.sessions, session...)
		session = v.sessions[at:len(v.sessions):len(v.sessions)]
	}
	r.recs = append(r.recs, pairRec{off: int64(start), line: uint32(line), endpoint: id, session: session,
		bodyAt: v.d.bodyAt, bodyEnd: v.d.bodyEnd})
}

// host adds a host to the chunk's distinct hosts the first time it is seen.
func (v *validator) host(r *chunkResult, host []byte) {
	if len(r.hosts) == 0 || !bytes.Equal(host, v.lastHost) { // most lines repeat the last host
		if !v.hostSeen[string(host)] {
			v.hostSeen[string(host)] = true
			r.hosts = append(r.hosts, string(host))
		}
		v.lastHost = append(v.lastHost[:0], host...)
	}
}

// skipOf says whether a valid HTTP pair is skipped all the same: an OUT
// pair when no rule chose the direction. (gRPC pairs are replayed, over
// HTTP/2; the transport refuses them before any traffic when it cannot.)
func (v *validator) skipOf(p *Pair) skipKind {
	// A signature line is an answer to the service's call (an OUT pair by
	// nature): it is only read for the mock, whose filter chooses OUT.
	if p.IsOut() && !p.FromSignature && !v.opt.Filter.choosesDirection() {
		return skipDirectionOut
	}
	return replayable
}

// lineError is err as reported for a line.
func lineError(file string, line int, err error) LineError {
	le := LineError{File: file, Line: line, Err: asFieldError(err)}
	if le.Err.Off >= 0 {
		le.Col = le.Err.Off + 1
	}
	return le
}
