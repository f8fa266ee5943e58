package vu

import (
	"bufio"
	"fmt"
	"io"
)

// DryRun writes the first n requests of the run to w exactly as they would
// go on the wire, after every rewrite, and sends nothing. Each is preceded
// by a line
//
//	### 1 traffic.jsonl:12 -> 127.0.0.1:8080 (POST /events)
//
// and followed by a blank line. Requests come in the order a run starts
// them: iterations in file order (by recorded time with recorded pacing),
// each iteration's requests in order.
func (p *Pool) DryRun(w io.Writer, n int) error {
	if err := p.Config.Validate(); err != nil {
		return err
	}
	cfg := &p.Config
	if err := cfg.checkHosts(p.File); err != nil {
		return err
	}
	r := &run{cfg: cfg, file: p.File, pool: p}
	order := func(k int) int { return k }
	if cfg.Model == Recorded {
		sorted, _, _, err := recordedOrder(p.File, cfg.Speed)
		if err != nil {
			return err
		}
		order = func(k int) int { return sorted[k] }
	}
	v := newVU(r, 0)
	bw := bufio.NewWriter(w)
	sent := 0
	endpoints := p.File.Endpoints()
	for k := 0; k < p.File.Iterations() && sent < n; k++ {
		v.cur.Start(order(k))
		if p.Rewriter != nil {
			p.Rewriter.Begin(0)
		}
		for sent < n {
			more, err := v.cur.Next(&v.pair)
			if err != nil {
				return err
			}
			if !more {
				break
			}
			req := &v.pair.Req
			if rw := p.Rewriter; rw != nil {
				if err := rw.Rewrite(0, req, &v.pair); err != nil {
					return fmt.Errorf("%s:%d: rewrite: %w", p.File.Name(), v.pair.Line, err)
				}
			}
			_, addr, _, host := v.destination(req)
			sent++
			fmt.Fprintf(bw, "### %d %s:%d -> %s (%s)\n", sent, p.File.Name(), v.pair.Line, addr, endpoints[v.pair.Endpoint])
			bw.Write(appendHead(v.wbuf[:0], req, host, cfg.NoConnectionReuse))
			bw.Write(req.Body)
			bw.WriteString("\n\n")
		}
	}
	return bw.Flush()
}
