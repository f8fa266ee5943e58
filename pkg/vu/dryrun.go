package vu

import (
	"bufio"
	"fmt"
	"io"

	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
)

// DryRun writes the first n requests of the run to w exactly as they would
// go on the wire, after every rewrite, and sends nothing. Each is preceded
// by a line
//
//	### 1 traffic.jsonl:12 -> 127.0.0.1:8080 (POST /events)
//
// and followed by a blank line. Requests come in the order a run starts
// them: iterations in file order (by recorded time with recorded pacing),
// each iteration's requests in order. The transport says what goes on the
// wire (transport.Transport.AppendWire).
func (p *Pool) DryRun(w io.Writer, n int) error {
	if err := p.prepare(); err != nil {
		return err
	}
	cfg := &p.Config
	order := func(k int) int { return k }
	if cfg.Model == schedule.Recorded {
		sorted, _, _, err := recordedOrder(p.File, cfg.Speed)
		if err != nil {
			return err
		}
		order = func(k int) int { return sorted[k] }
	}
	cur := p.File.NewCursor()
	if p.DecodeResponses {
		cur.WithResponses()
	}
	var pair rrpair.Pair
	var wire []byte
	bw := bufio.NewWriter(w)
	sent := 0
	endpoints := p.File.Endpoints()
	for k := 0; k < p.File.Iterations() && sent < n; k++ {
		cur.Start(order(k))
		if p.Rewriter != nil {
			p.Rewriter.Begin(0)
		}
		for sent < n {
			more, err := cur.Next(&pair)
			if err != nil {
				return err
			}
			if !more {
				break
			}
			req := &pair.Req
			if rw := p.Rewriter; rw != nil {
				if err := rw.Rewrite(0, req, &pair); err != nil {
					return fmt.Errorf("%s:%d: rewrite: %w", p.File.Name(), pair.Line, err)
				}
			}
			var addr string
			addr, wire = p.Transport.AppendWire(wire[:0], req)
			sent++
			fmt.Fprintf(bw, "### %d %s:%d -> %s (%s)\n", sent, p.File.Name(), pair.Line, addr, endpoints[pair.Endpoint])
			bw.Write(wire)
			bw.WriteString("\n\n")
		}
	}
	return bw.Flush()
}
