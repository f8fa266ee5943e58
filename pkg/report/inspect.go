package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// writeInspectSpan writes the time span of the file's recorded times and,
// when some pairs have one, how many have none.
func writeInspectSpan(tw io.Writer, st *rrpair.Stats) {
	if st.First != nil {
		fmt.Fprintf(tw, "Time span\t%s (%s .. %s)\n", formatSpan(st.SpanS),
			st.First.UTC().Format(time.RFC3339Nano), st.Last.UTC().Format(time.RFC3339Nano))
	} else {
		fmt.Fprintf(tw, "Time span\tunknown (no ts recorded)\n")
	}
	if st.WithoutTS > 0 && st.First != nil {
		fmt.Fprintf(tw, "Without ts\t%d\n", st.WithoutTS)
	}
}

// statusNames are the recorded status counts by the code's name: "none"
// for pairs recorded without an answer (code 0).
func statusNames(status map[int]int) map[string]int {
	statuses := make(map[string]int, len(status))
	for code, n := range status {
		name := strconv.Itoa(code)
		if code == 0 {
			name = "none"
		}
		statuses[name] = n
	}
	return statuses
}

// WriteInspect renders the summary of a traffic file (`replay inspect`).
func WriteInspect(w io.Writer, st *rrpair.Stats) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "File\t%s\n", st.File)
	fmt.Fprintf(tw, "Pairs\t%d\n", st.Pairs)
	if n := st.Skipped.Total(); n > 0 {
		fmt.Fprintf(tw, "Skipped\t%s, not HTTP requests to replay: %s\n", lines(n), strings.Join(st.Skipped.Kinds(), ", "))
	}
	if st.SignatureLines > 0 {
		fmt.Fprintf(tw, "Signature lines\t%d: answers whose request is a Speedscale signature (replay mock serves them; replay run skips them: no request to send)\n", st.SignatureLines)
	}
	if len(st.UnreadSignatureKeys) > 0 {
		fmt.Fprintf(tw, "Signature keys not read\t%s (replay mock does not serve these lines)\n", joinCounts(st.UnreadSignatureKeys))
	}
	if st.Filtered > 0 {
		fmt.Fprintf(tw, "Filtered out\t%d pairs (--keep, --drop, --from, --to, --sample)\n", st.Filtered)
	}
	fmt.Fprintf(tw, "Sessions\t%d\n", st.Sessions)
	fmt.Fprintf(tw, "Iterations\t%d (sessions, plus pairs without one)\n", st.Iterations)
	writeInspectSpan(tw, st)
	if st.OutOfOrder > 0 {
		fmt.Fprintf(tw, "Out of ts order\t%d\n", st.OutOfOrder)
	}
	fmt.Fprintf(tw, "Methods\t%s\n", joinCounts(st.Methods))
	if len(st.Hosts) > 0 {
		fmt.Fprintf(tw, "Hosts\t%s\n", joinCounts(st.Hosts))
	}
	fmt.Fprintf(tw, "Recorded status\t%s\n", joinCounts(statusNames(st.Status)))
	fmt.Fprintf(tw, "HTTP versions\t%s\n", joinCounts(st.Versions))
	if st.Downgraded > 0 {
		fmt.Fprintf(tw, "Downgraded\t%d (recorded as HTTP/2 or 3, replayed as HTTP/1.1)\n", st.Downgraded)
	}
	if st.GRPC > 0 {
		fmt.Fprintf(tw, "gRPC pairs\t%d (content-type application/grpc; replayed over HTTP/2)\n", st.GRPC)
	}
	writeInspectWebSocket(tw, st.WebSocket)
	fmt.Fprintf(tw, "Body bytes\trequests %s, responses %s\n", humanBytes(st.ReqBytes), humanBytes(st.ResBytes))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nEndpoints (%d)\n", len(st.Endpoints))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "pairs\t  %%\t\n")
	for _, e := range st.Endpoints {
		fmt.Fprintf(tw, "%d\t%.1f%%\t  %s\n", e.Pairs, 100*float64(e.Pairs)/float64(max(st.Pairs, 1)), e.Name)
	}
	return tw.Flush()
}

// joinCounts renders "GET:12 POST:3", most frequent first.
func joinCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ":" + strconv.Itoa(m[k])
	}
	return strings.Join(parts, "  ")
}

func formatSpan(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}

func humanBytes(n int64) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 10<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 10<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// lines is "1 line" or "n lines".
func lines(n int) string {
	if n == 1 {
		return "1 line"
	}
	return strconv.Itoa(n) + " lines"
}

// writeInspectWebSocket is the line of the recorded WebSocket sessions;
// none when the file has none (ws nil).
func writeInspectWebSocket(w io.Writer, ws *rrpair.WSStats) {
	if ws == nil {
		return
	}
	sessions := "sessions"
	if ws.Sessions == 1 {
		sessions = "session"
	}
	fmt.Fprintf(w, "WebSocket\t%d %s, %d messages (client %d, server %d), pings client %d, server %d",
		ws.Sessions, sessions, ws.Messages.Client+ws.Messages.Server, ws.Messages.Client, ws.Messages.Server, ws.Pings.Client, ws.Pings.Server)
	if ws.Oversize != (rrpair.WSCounts{}) {
		fmt.Fprintf(w, "; over the recorder's bound, not kept: client %d, server %d", ws.Oversize.Client, ws.Oversize.Server)
	}
	if ws.Broken > 0 {
		fmt.Fprintf(w, "; %d recorded only in part (a frame the recorder could not read)", ws.Broken)
	}
	fmt.Fprintln(w)
}
