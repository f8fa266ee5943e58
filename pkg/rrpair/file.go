package rrpair

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"
	"unsafe"
)

// Options say how to open a file.
type Options struct {
	// RequireHost makes a line without a host an error: nothing says where
	// to send it (no target was given).
	RequireHost bool
	// MaxErrors is how many bad lines a ValidationError lists (default 10;
	// all are counted).
	MaxErrors int
	// Filter selects the pairs to keep; every line is validated all the
	// same. Nil keeps them all.
	Filter *Filter
	// Shard keeps iteration k (counted after the filter) when k mod
	// Shard.Count = Shard.Index: a disjoint, deterministic share whose
	// sessions stay whole. The endpoint table still comes from every kept
	// pair, so all shards derive the same one. Zero Count: no sharding.
	Shard Shard
	// Signatures reads a response-only line whose request is given as a
	// Speedscale signature (a snapshot's reaction file) as a pair whose
	// request is the signature's (Pair.FromSignature): what replay mock
	// answers from. Without it such a line is skipped (Skipped.Signature):
	// a run has no request to send.
	Signatures bool
	// BodyCache is how many bytes the request bodies with JSON escapes may
	// take once unescaped at Open (with their index), so that a cursor
	// does not unescape them again at each decode (bodycache.go); a file
	// whose bodies do not fit is unescaped at each decode. 0: no cache.
	BodyCache int64
}

// Shard is one share of a file's iterations: Index of Count.
type Shard struct{ Index, Count int }

// ErrAllFiltered is returned when the filter leaves no pair.
var ErrAllFiltered = errors.New("no pairs left after the filters")

// ErrEmpty is returned for a file with no pairs.
var ErrEmpty = errors.New("no pairs: the file is empty")

// ErrAllSkipped is returned for a file whose every line was skipped: none
// is an HTTP request to replay (see Skipped).
var ErrAllSkipped = errors.New("no HTTP pairs to replay")

// LineError is a bad line: where, and what is wrong.
type LineError struct {
	File string
	Line int
	Col  int // byte column of a JSON syntax error, from 1; 0 when not known
	Err  *FieldError
}

func (e *LineError) Error() string {
	if e.Col > 0 {
		return fmt.Sprintf("%s:%d:%d: %v", e.File, e.Line, e.Col, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ValidationError reports the bad lines of a file: the first few in full and
// how many there are in all. A file with any bad line is not opened, so no
// traffic is sent from it.
type ValidationError struct {
	File  string
	Lines []LineError // the first Options.MaxErrors
	Total int
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	if e.Total == 1 {
		fmt.Fprintf(&b, "%s: 1 bad line:", e.File)
	} else {
		fmt.Fprintf(&b, "%s: %d bad lines:", e.File, e.Total)
	}
	for i := range e.Lines {
		b.WriteString("\n  ")
		b.WriteString(e.Lines[i].Error())
	}
	if more := e.Total - len(e.Lines); more > 0 {
		fmt.Fprintf(&b, "\n  ... and %d more", more)
	}
	return b.String()
}

// pairRef locates one pair in the mapping. It is what the line index costs:
// 16 bytes a pair (14, padded).
type pairRef struct {
	off      int64  // offset of the line in the mapping
	line     uint32 // line number, from 1
	endpoint uint16 // index into File.endpoints
}

// File is an opened, validated traffic file, memory-mapped read-only. It is
// shared by every VU: nothing in it changes after Open, so reading it needs
// no lock. Each VU reads it through a Cursor of its own.
type File struct {
	name   string
	mapped []byte // the mapping
	data   []byte // the mapping, after a byte order mark
	pairs  []pairRef
	// Iteration k is the pairs iterPairs[iterStart[k]:iterStart[k+1]]: one
	// session in file order, or one pair without a session. Both are nil
	// when no pair has a session, and iteration k is pair k.
	iterStart []uint32
	iterPairs []uint32
	sessions  int
	endpoints []string
	hosts     []string // distinct recorded hosts, in order of first appearance
	filtered  int      // pairs the filter dropped
	skipped   Skipped  // valid lines not replayed, by kind
	shard     Shard
	// The request bodies with escapes, unescaped once (bodycache.go):
	// pair i's is bodies[bodyOf[i]-1] when bodyOf[i] is not 0; both nil
	// when none is cached.
	bodies    []cachedBody
	bodyOf    []uint32
	bodyCache BodyCache
	// signatures: Options.Signatures, for the cursors' decoders.
	signatures bool
	firstTS    int64 // earliest ts of the kept pairs, Unix ns; 0 when none has one
	// setsCookies: a recorded response has a Set-Cookie header.
	setsCookies bool
}

// Open maps and validates the file at path. Every line is checked before
// Open returns; a file with a bad line returns a *ValidationError naming the
// lines. Blank lines are skipped.
func Open(path string, opt Options) (*File, error) {
	return openAs(path, path, opt)
}

// OpenReader spools r (standard input, say) to a temporary file, maps it and
// validates it as Open does; name is how errors call it. The temporary file
// is unlinked as soon as it is created: the open descriptor and then the
// mapping keep its bytes until Close, and no exit leaves it behind.
func OpenReader(r io.Reader, name string, opt Options) (*File, error) {
	return OpenReaderContext(context.Background(), r, name, opt)
}

// OpenReaderContext is OpenReader, stopped at once when ctx is done (a
// Ctrl-C while standard input is still being spooled): it then returns
// ctx's cause. A read of r that blocks is interrupted when r has a read
// deadline (a pipe Go polls); otherwise the copy is abandoned, and its
// goroutine ends at r's next read, writing nowhere. A spool that runs out
// of room says so (ENOSPC) and where.
func OpenReaderContext(ctx context.Context, r io.Reader, name string, opt Options) (*File, error) {
	tmp, err := createSpool()
	if err != nil {
		return nil, fmt.Errorf("spool %s: %w", name, err)
	}
	defer tmp.Close()
	if err := spool(ctx, tmp, r); err != nil {
		if noSpace(err) {
			return nil, fmt.Errorf("spool %s: no space left in %s for its copy (set TMPDIR to a larger file system, or pass a file with -f): %w", name, os.TempDir(), err)
		}
		return nil, fmt.Errorf("spool %s: %w", name, err)
	}
	return openFD(tmp, name, opt)
}

// createSpool creates the spool's temporary file, gone once closed
// (newSpool, per platform). Tests replace it.
var createSpool = newSpool

// spool copies r into w until r ends, or ctx is done.
func spool(ctx context.Context, w io.Writer, r io.Reader) error {
	if ctx.Done() == nil {
		_, err := io.Copy(w, r)
		return err
	}
	done := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		buf := make([]byte, 256<<10)
		for {
			select {
			case <-stop:
				done <- context.Canceled
				return
			default:
			}
			n, err := r.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					done <- werr
					return
				}
			}
			if err == io.EOF {
				done <- nil
				return
			}
			if err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		close(stop)
		if d, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(time.Now()) == nil {
			<-done
		}
		return context.Cause(ctx)
	}
}

func openAs(path, name string, opt Options) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	return openFD(fd, name, opt)
}

// openFD maps and validates the open file fd; name is how errors call it.
func openFD(fd *os.File, name string, opt Options) (*File, error) {
	if opt.MaxErrors <= 0 {
		opt.MaxErrors = 10
	}
	if opt.Filter != nil {
		if err := opt.Filter.Validate(); err != nil {
			return nil, err
		}
	}
	if sh := opt.Shard; sh.Count != 0 && (sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count) {
		return nil, fmt.Errorf("shard %d/%d: want i/n with 0 ≤ i < n", sh.Index, sh.Count)
	}
	mapped, err := mapFile(fd, name)
	if err != nil {
		return nil, err
	}
	f := &File{name: name, mapped: mapped, data: bytes.TrimPrefix(mapped, utf8BOM), signatures: opt.Signatures}
	if err := f.index(opt); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// utf8BOM is the byte order mark some Windows tools write at the start of
// a UTF-8 file: skipped.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func mapFile(fd *os.File, name string) ([]byte, error) {
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrEmpty)
	}
	if int64(int(st.Size())) != st.Size() {
		return nil, fmt.Errorf("%s: %d bytes, more than this platform can map", name, st.Size())
	}
	data, err := mmap(fd, int(st.Size()))
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", name, err)
	}
	return data, nil
}

// Close unmaps the file. Pairs decoded from it must not be used afterwards.
func (f *File) Close() error {
	if f.mapped == nil {
		return nil
	}
	err := munmap(f.mapped)
	f.mapped, f.data = nil, nil
	return err
}

// index validates every line and builds the line, endpoint and session
// indexes.
func (f *File) index(opt Options) error {
	adviseSequential(f.mapped, true)
	defer adviseSequential(f.mapped, false)

	verr := &ValidationError{File: f.name}
	cs := chunks(f.data)
	lines := 1
	for _, c := range cs {
		lines += c.lines
	}
	// Size the index exactly: growing it by doubling would leave copies
	// of a large index behind as garbage.
	f.pairs = make([]pairRef, 0, lines)
	b := &indexBuild{
		epIDs:       map[string]uint16{},
		sessionIter: map[string]uint32{},
		hostSeen:    map[string]bool{},
		iterOf:      make([]uint32, 0, lines),
	}
	tooLong := false
	f.validateChunks(cs, opt, func(c *chunk) {
		r := &c.res
		verr.Total += r.errTotal
		verr.Lines = append(verr.Lines, r.errs[:min(len(r.errs), opt.MaxErrors-len(verr.Lines))]...)
		tooLong = tooLong || r.tooLong
		if verr.Total > 0 || tooLong {
			return
		}
		f.fold(b, r)
	})
	if err := f.indexErr(verr, tooLong); err != nil {
		return err
	}
	f.sessions = len(b.sessionIter)
	f.rankEndpoints(b.epNames, b.epCounts)
	if f.sessions > 0 {
		f.groupSessions(b.iterOf, b.iters)
	}
	if opt.Shard.Count > 1 {
		f.keepShard(opt.Shard)
	}
	f.cacheBodies(b.bodies, b.bodyBytes, opt.BodyCache)
	b.bodies = nil
	// The session map and the build slices are garbage now; hand their
	// memory back before the run starts, so a large file costs only its
	// index.
	b.sessionIter, b.iterOf = nil, nil
	debug.FreeOSMemory()
	return nil
}

// indexBuild is what File.index numbers across chunks while it folds them
// in file order.
type indexBuild struct {
	epIDs       map[string]uint16 // name -> provisional id
	epNames     []string          // provisional id -> name
	epCounts    []int             // provisional id -> pairs
	sessionIter map[string]uint32
	hostSeen    map[string]bool
	iters       uint32
	iterOf      []uint32   // pair -> iteration, while building
	global      []uint16   // chunk endpoint -> provisional id
	bodies      []bodySpan // the escaped request bodies (noteBody)
	bodyBytes   int64      // their length, escaped
}

// fold adds one chunk's result, free of errors, to the file's index.
func (f *File) fold(b *indexBuild, r *chunkResult) {
	f.filtered += r.filtered
	f.skipped.add(&r.skipped)
	f.setsCookies = f.setsCookies || r.cookies
	b.endpoints(r)
	for _, h := range r.hosts {
		if !b.hostSeen[h] {
			b.hostSeen[h] = true
			f.hosts = append(f.hosts, h)
		}
	}
	if r.firstTS != 0 && (f.firstTS == 0 || r.firstTS < f.firstTS) {
		f.firstTS = r.firstTS
	}
	f.foldRecords(b, r)
}

// endpoints maps the chunk's endpoint names to provisional ids (b.global),
// numbering names in order of first appearance, and counts their pairs.
func (b *indexBuild) endpoints(r *chunkResult) {
	b.global = b.global[:0]
	for i, name := range r.names {
		id, ok := b.epIDs[name]
		if !ok {
			if len(b.epNames) >= 1<<16-1 {
				id = 1<<16 - 1 // beyond 65535 names they all rank last
			} else {
				id = uint16(len(b.epNames))
				b.epIDs[name] = id
				b.epNames = append(b.epNames, name)
				b.epCounts = append(b.epCounts, 0)
			}
		}
		if int(id) < len(b.epCounts) {
			b.epCounts[id] += r.counts[i]
		}
		b.global = append(b.global, id)
	}
}

// foldRecords appends the chunk's kept lines to the index, each with its
// iteration: a session's first line starts one, its later lines join it,
// and a line of no session is an iteration of its own.
func (f *File) foldRecords(b *indexBuild, r *chunkResult) {
	for i := range r.recs {
		rec := &r.recs[i]
		f.pairs = append(f.pairs, pairRef{off: rec.off, line: rec.line, endpoint: b.global[rec.endpoint]})
		b.noteBody(len(f.pairs)-1, rec.bodyAt, rec.bodyEnd)
		it := b.iters
		if len(rec.session) > 0 {
			if known, ok := b.sessionIter[string(rec.session)]; ok {
				it = known
			} else {
				b.sessionIter[f.key(rec.session)] = b.iters
				b.iters++
			}
		} else {
			b.iters++
		}
		b.iterOf = append(b.iterOf, it)
	}
}

// indexErr is why the folded index cannot be used: a line past 2^32, the
// lines' errors, or no pair left to replay; nil when it can.
func (f *File) indexErr(verr *ValidationError, tooLong bool) error {
	if tooLong && verr.Total == 0 {
		return fmt.Errorf("%s: more than 2^32 lines", f.name)
	}
	if verr.Total > 0 {
		return verr
	}
	if len(f.pairs) > 0 {
		return nil
	}
	if f.filtered > 0 {
		if f.skipped.Total() > 0 {
			return fmt.Errorf("%s: %w (%d pairs filtered out; skipped %v)", f.name, ErrAllFiltered, f.filtered, &f.skipped)
		}
		return fmt.Errorf("%s: %w (%d pairs filtered out)", f.name, ErrAllFiltered, f.filtered)
	}
	if f.skipped.Total() > 0 {
		hint := ""
		if f.skipped.DirectionOut > 0 {
			hint = "; --keep direction=OUT replays the OUT pairs"
		}
		if f.skipped.Signature > 0 {
			hint += "; signature lines are answers whose request is only a signature: replay mock serves them"
		}
		return fmt.Errorf("%s: %w: skipped %v%s", f.name, ErrAllSkipped, &f.skipped, hint)
	}
	return fmt.Errorf("%s: %w", f.name, ErrEmpty)
}

// key returns b as a map key without copying it when b lies in the mapping
// (the map lives only while the index is built, and the mapping outlives
// it); a string that was unescaped elsewhere is copied.
func (f *File) key(b []byte) string {
	if f.inMapping(b) {
		return unsafe.String(&b[0], len(b))
	}
	return string(b)
}

// inMapping says whether b (not empty) lies in the mapping.
func (f *File) inMapping(b []byte) bool {
	return len(f.data) > 0 && uintptr(unsafe.Pointer(&b[0])) >= uintptr(unsafe.Pointer(&f.data[0])) &&
		uintptr(unsafe.Pointer(&b[0])) < uintptr(unsafe.Pointer(&f.data[0]))+uintptr(len(f.data))
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// rankEndpoints keeps the MaxEndpoints most frequent names (ties: first seen
// first) and maps the rest to OtherEndpoint, so the table depends only on
// the file: every shard of a run derives the same one.
func (f *File) rankEndpoints(names []string, counts []int) {
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return counts[order[a]] > counts[order[b]] })
	final := make([]uint16, len(names))
	keep := min(len(order), MaxEndpoints)
	for rank, id := range order {
		final[id] = uint16(min(rank, keep))
	}
	f.endpoints = make([]string, keep, keep+1)
	for rank := 0; rank < keep; rank++ {
		f.endpoints[rank] = names[order[rank]]
	}
	if len(order) > keep || len(names) == 1<<16-1 {
		f.endpoints = append(f.endpoints, OtherEndpoint)
	}
	for i := range f.pairs {
		id := f.pairs[i].endpoint
		if int(id) < len(final) {
			f.pairs[i].endpoint = final[id]
		} else {
			f.pairs[i].endpoint = uint16(keep)
		}
	}
}

// keepShard narrows the iteration index to the shard's iterations.
func (f *File) keepShard(sh Shard) {
	n := f.Iterations()
	start := make([]uint32, 0, n/sh.Count+2)
	pairs := make([]uint32, 0, len(f.pairs)/sh.Count+1)
	start = append(start, 0)
	for k := sh.Index; k < n; k += sh.Count {
		for j := 0; j < f.IterationLen(k); j++ {
			pairs = append(pairs, uint32(f.PairOf(k, j)))
		}
		start = append(start, uint32(len(pairs)))
	}
	f.iterStart, f.iterPairs = start, pairs
	f.shard = sh
}

// FirstTS is the earliest recorded time of the file's pairs (all shards),
// in Unix ns; false when no pair has a ts. Shards pace recorded times from
// it, so that they keep one timeline.
func (f *File) FirstTS() (int64, bool) { return f.firstTS, f.firstTS != 0 }

// Shard is the share of the file this File walks (zero Count: all of it).
func (f *File) Shard() Shard { return f.shard }

// groupSessions builds the iteration index with a counting sort, keeping
// file order within each iteration.
func (f *File) groupSessions(iterOf []uint32, iters uint32) {
	f.iterStart = make([]uint32, iters+1)
	for _, it := range iterOf {
		f.iterStart[it+1]++
	}
	for k := 1; k < len(f.iterStart); k++ {
		f.iterStart[k] += f.iterStart[k-1]
	}
	f.iterPairs = make([]uint32, len(iterOf))
	fill := make([]uint32, iters)
	for pair, it := range iterOf {
		f.iterPairs[f.iterStart[it]+fill[it]] = uint32(pair)
		fill[it]++
	}
}

// Name is the file's name as errors give it.
func (f *File) Name() string { return f.name }

// Len is the number of pairs.
func (f *File) Len() int { return len(f.pairs) }

// Sessions is the number of distinct tags.session values.
func (f *File) Sessions() int { return f.sessions }

// Iterations is the number of iterations: sessions plus pairs without one.
func (f *File) Iterations() int {
	if f.iterStart == nil {
		return len(f.pairs)
	}
	return len(f.iterStart) - 1
}

// Requests is the number of requests the iterations hold: Len, or for a
// shard, its share of the pairs.
func (f *File) Requests() int {
	if f.iterStart == nil {
		return len(f.pairs)
	}
	return int(f.iterStart[len(f.iterStart)-1])
}

// PerIteration is the mean number of requests an iteration holds (after
// the filter and the shard): what converts a rate in requests a second to
// iterations. 0 for a file with no iteration.
func (f *File) PerIteration() float64 {
	if f.Iterations() == 0 {
		return 0
	}
	return float64(f.Requests()) / float64(f.Iterations())
}

// IterationLen is the number of pairs in iteration k.
func (f *File) IterationLen(k int) int {
	if f.iterStart == nil {
		return 1
	}
	return int(f.iterStart[k+1] - f.iterStart[k])
}

// PairOf is the index of the j-th pair of iteration k.
func (f *File) PairOf(k, j int) int {
	if f.iterStart == nil {
		return k
	}
	return int(f.iterPairs[int(f.iterStart[k])+j])
}

// Filtered is the number of pairs the Options.Filter dropped.
func (f *File) Filtered() int { return f.filtered }

// Skipped counts the valid lines that are not replayed, by kind: other
// protocols, response-only records, gRPC pairs, OUT pairs. The copy is
// the caller's.
func (f *File) Skipped() Skipped { return f.skipped.clone() }

// Hosts are the distinct recorded hosts (http.req.host, or the host of an
// absolute URI), in order of first appearance; "" stands for pairs without
// one.
func (f *File) Hosts() []string { return f.hosts }

// Endpoints is the endpoint table: names in order of frequency in the file,
// at most MaxEndpoints of them, then OtherEndpoint if any pair is beyond.
// Pair.Endpoint indexes it. The slice must not be modified.
func (f *File) Endpoints() []string { return f.endpoints }

// line returns the bytes of pair i, without its newline.
func (f *File) line(i int) []byte {
	rest := f.data[f.pairs[i].off:]
	if end := bytes.IndexByte(rest, '\n'); end >= 0 {
		return rest[:end]
	}
	return rest
}

// Cursor reads pairs of a File into a caller's Pair. Each VU owns one:
// its buffers are reused from pair to pair, so a warmed-up Cursor does not
// allocate. A Cursor is not safe for concurrent use.
type Cursor struct {
	f    *File
	d    decoder
	iter int // current iteration
	pos  int // next pair within it
}

// NewCursor returns a cursor positioned before iteration 0.
func (f *File) NewCursor() *Cursor {
	c := &Cursor{f: f}
	c.d.signatures = f.signatures
	return c
}

// WithResponses makes the cursor decode recorded response headers and
// bodies too (for comparison); by default only the status is read.
func (c *Cursor) WithResponses() *Cursor {
	c.d.responses = true
	return c
}

// Start positions the cursor at the first pair of iteration k.
func (c *Cursor) Start(k int) {
	c.iter, c.pos = k, 0
}

// Next decodes the next pair of the current iteration into p. It returns
// false when the iteration has no more pairs.
func (c *Cursor) Next(p *Pair) (bool, error) {
	if c.pos >= c.f.IterationLen(c.iter) {
		return false, nil
	}
	i := c.f.PairOf(c.iter, c.pos)
	c.pos++
	return true, c.Decode(i, p)
}

// Faulted says whether r, a recovered panic value, is a memory fault in
// the file's mapping: its pages are gone, the file was truncated. A reader
// of pairs' bytes (which lie in the mapping) that runs with
// debug.SetPanicOnFault turns such a fault into ErrFileChanged; any other
// panic is not the file's, and must go on.
func (f *File) Faulted(r any) bool {
	e, ok := r.(interface{ Addr() uintptr })
	if !ok || len(f.mapped) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(&f.mapped[0]))
	return e.Addr() >= start && e.Addr() < start+uintptr(len(f.mapped))
}

// ErrFileChanged is the cause of a Decode that faulted on the mapping: the
// file was truncated (or rewritten) while it was being replayed.
var ErrFileChanged = errors.New("the file changed while it was replayed (truncated or rewritten?): stop writing to a file being replayed")

// Decode decodes pair i into p. The file was validated at Open, so an error
// here means the file changed under the mapping: a file truncated under
// it, whose pages are gone, returns an error wrapping ErrFileChanged
// rather than crashing the process (SIGBUS).
func (c *Cursor) Decode(i int, p *Pair) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if !c.f.Faulted(r) {
				panic(r)
			}
			err = fmt.Errorf("%s:%d: %w", c.f.name, c.f.pairs[i].line, ErrFileChanged)
		}
	}()
	ref := &c.f.pairs[i]
	c.d.cached = c.f.cachedBodyOf(i)
	kind, err := c.d.decode(c.f.line(i), p)
	if err == nil && kind != replayable { // it was an HTTP request at Open
		err = fmt.Errorf("%s:%d: %w", c.f.name, ref.line, ErrFileChanged)
	}
	if err != nil {
		if fe, ok := err.(*FieldError); ok {
			return &LineError{File: c.f.name, Line: int(ref.line), Err: fe}
		}
		return err
	}
	p.Index, p.Line, p.Endpoint = i, int(ref.line), ref.endpoint
	return nil
}

func asFieldError(err error) *FieldError {
	if fe, ok := err.(*FieldError); ok {
		return fe
	}
	return &FieldError{Msg: err.Error(), Off: -1}
}

// SetsCookies reports whether a recorded response sets a cookie (has a
// Set-Cookie header), which turns a replay's cookie jar on by default.
// Validation found out, at no extra cost.
func (f *File) SetsCookies() bool { return f.setsCookies }
