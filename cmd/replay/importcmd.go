package main

import (
	"github.com/replay-dev/replay/pkg/convert"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newImportCmd(std stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Convert a HAR, a GoReplay capture, an access log or a packet capture to RRPairs",
	}
	cmd.AddCommand(
		harImporter(std),
		importer(std, convert.Gor(), importSpec{
			use:   "gor FILE.gor...",
			short: "Convert GoReplay captures (.gor, .gor.gz) to RRPairs",
			long: `Convert GoReplay capture files to RRPairs: each request with its original
response (replayed responses are counted, not kept), names, case and order
of headers as captured, chunked bodies de-chunked, in request order (by the
request record's timestamp). Several files (GoReplay's chunks,
requests_0.gor, requests_1.gor, ..., or several instances' captures; a glob
pattern is expanded when the shell did not) are merged by timestamp into
one. Gzip-compressed captures are read as they are. A request without a
Host header is kept: it replays with --target. Records that cannot be
converted are skipped, reported on stderr with their file and number.`,
			example: `  replay import gor requests_0.gor.gz -o traffic.jsonl
  replay import gor 'capture/requests_*.gor' -o traffic.jsonl`,
		}),
		accessLogImporter(std),
		pcapImporter(std),
	)
	return cmd
}

// harImporter is import har.
func harImporter(std stdio) *cobra.Command {
	var flags convert.HARFlags
	return importer(std, convert.HARWith(&flags), importSpec{
		use:   "har FILE.har",
		short: "Convert a HAR 1.2 file (a browser's or a proxy's export) to RRPairs",
		long: `Convert a HAR 1.2 file to RRPairs: entries ordered by startedDateTime, pages
as sessions, the URL's path and query as recorded, HTTP/2 pseudo-headers and
hop-by-hop headers dropped, a recorded Content-Length kept in place (the
replay writes the length of the body it sends), postData.text (or its
params, rebuilt) as the body, the response's content.text (base64 when so
encoded) kept for --compare. HTTP/2 and 3 entries keep their version; a run
that sends them as HTTP/1.1 counts them as downgraded. Entries that never
reached the network (cache hits, WebSockets, status 0) and entries that
cannot be converted are skipped, counted by reason, and reported on stderr
with their number. With --websocket, a WebSocket entry (Chrome's or
mitmproxy's _webSocketMessages) is kept as its upgrade pair with the
session's messages in order.`,
		example: `  replay import har session.har -o traffic.jsonl
  replay import har --websocket chat.har -o traffic.jsonl`,
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&flags.WebSockets, "websocket", true, "keep WebSocket entries as their upgrade pairs with the sessions' messages (_webSocketMessages: text, binary, close; pings counted); --websocket=false skips them")
		},
	})
}

// pcapImporter is import pcap.
func pcapImporter(std stdio) *cobra.Command {
	var flags convert.PcapFlags
	return importer(std, convert.Pcap(&flags), importSpec{
		use:   "pcap FILE...",
		short: "Convert packet captures (tcpdump, Wireshark: pcap, pcapng) to RRPairs",
		long: `Convert packet captures to RRPairs: the HTTP/1.x, cleartext HTTP/2 (h2c)
and gRPC exchanges their TCP connections carried, each request with its
answer. pcap and pcapng files (tcpdump -w, Wireshark, dumpcap, kubectl
sniff), gzip-compressed or not; several files (a rotated capture, or
captures of several hosts) are merged by packet time. Link types: Ethernet
(VLAN tags too), Linux cooked (SLL, SLL2), raw IP, BSD loopback; IPv4 and
IPv6, fragments reassembled. TCP is reassembled in sequence order;
retransmissions and overlaps are read once; what the capture lost (a gap,
a snap length that cut packets) skips the message it cut, and the stream
is found again at the next request line. Requests keep their raw target,
header names in their case and order, and body; a pair's time is its
request's first byte, its duration runs to its answer's last byte, and
pairs are written in request order. TLS connections are decrypted with
--keylog (the client's SSLKEYLOGFILE): their pairs are https, HTTP/1.1
or HTTP/2 as ALPN chose. TLS connections without keys, connections that
are not HTTP, and all else that is not kept are counted and reported on
stderr with their packet number. With --websocket, the frames after a
WebSocket upgrade's 101 are read into the upgrade pair's session.`,
		example: `  tcpdump -i any -s 0 -w capture.pcap 'tcp port 8080'
  replay import pcap capture.pcap --service 10.0.0.5:8080 -o traffic.jsonl
  replay import pcap 'dump.pcap*' --session header:X-User-Id -o traffic.jsonl
  SSLKEYLOGFILE=keys.log curl https://shop.example/   # while tcpdump captures port 443
  replay import pcap tls.pcap --keylog keys.log -o traffic.jsonl`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringArrayVar(&flags.Services, "service", nil, "the service's address, `IP:PORT` (repeatable): connections to it are IN, its own calls elsewhere OUT, the rest skipped (default: every connection IN)")
			fs.StringVar(&flags.Session, "session", "connection", "the `SESSION` of a pair: connection, header:NAME, cookie:NAME or none")
			fs.DurationVar(&flags.StreamTimeout, "stream-timeout", 0, "end connections idle this `LONG` in capture time, writing their requests still waiting without an answer (default 2m)")
			fs.Int64Var(&flags.MaxBuffer, "max-buffer", 0, "bound to `BYTES` what is held for all connections (segments out of order, messages under way); over it the connection holding the most gives them up, counted (default 64 MiB)")
			fs.BoolVar(&flags.WebSockets, "websocket", true, "keep WebSocket upgrades as their pairs with the sessions' messages, read from the frames after each 101 (text, binary, close; pings counted); --websocket=false passes the connection over")
			fs.StringVar(&flags.KeyLog, "keylog", "", "decrypt TLS 1.2 and 1.3 connections with the secrets of this key log `FILE` (the client's SSLKEYLOGFILE: curl, browsers, Go, OpenSSL); a connection whose keys it lacks is counted")
		},
	})
}

// accessLogImporter is import access-log.
func accessLogImporter(std stdio) *cobra.Command {
	var flags convert.AccessLogFlags
	return importer(std, convert.AccessLog(&flags), importSpec{
		use:   "access-log FILE",
		short: "Convert a web server's access log (nginx, Apache, JSON) to RRPairs",
		long: `Convert an access log to RRPairs: nginx's and Apache's combined and common
formats, an nginx log_format string (--format '$remote_addr [$time_local]
"$request" $status'), an Apache LogFormat (--format '%h %t "%r" %>s %D'),
or JSON lines (--format json; nginx's escape=json logs read as they are,
other key names with --json-field). Each request
line becomes a pair with its method, its raw target (nginx's \xHH escapes
undone), its time, its status and, when the log has it ($http_host, $host)
or --host gives it, its host. A log keeps no headers and no bodies: the
pairs have none. Times that count whole seconds ($time_local) are spread
evenly within their second, so that --pace recorded keeps the order and
the rate; a log out of time order is sorted. Lines that hold no request
("-", the bytes of a TLS handshake) are counted; lines that cannot be read
are skipped, reported on stderr with their number. Gzip-compressed logs
are read as they are.`,
		example: `  replay import access-log /var/log/nginx/access.log --host shop.example -o traffic.jsonl
  replay import access-log access.json --format json --json-field time=ts -o traffic.jsonl`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&flags.Format, "format", "", "the log's `FORMAT`: combined (reads common too), common, json, an nginx log_format or an Apache LogFormat string (default: json when the first line is an object, else combined)")
			fs.StringArrayVar(&flags.JSONFields, "json-field", nil, "a JSON log's field ROLE is at KEY, as in `ROLE=KEY` (roles: request, method, uri, time, status, host, duration, scheme, protocol); repeatable")
			fs.StringVar(&flags.Host, "host", "", "the `HOST[:PORT]` of the lines whose log names none (else they replay with --target)")
		},
	})
}

// importSpec is the cobra side of one import subcommand: its texts and
// its own flags.
type importSpec struct {
	use, short, long, example string
	flags                     func(*pflag.FlagSet)
}

// importer is an import subcommand: FILE (or -f; - for stdin) through
// imp to -o (or stdout), as the import job (convert.Import) says.
func importer(std stdio, imp convert.Importer, spec importSpec) *cobra.Command {
	job := convert.Job{Stdin: std.in, Stdout: std.out, Stderr: std.err}
	var file string
	cmd := &cobra.Command{
		Use: spec.use, Short: spec.short, Long: spec.long, Example: spec.example,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			job.Inputs = args
			if file != "" {
				job.Inputs = append([]string{file}, args...)
			}
			return convert.Import(imp, job)
		},
	}
	if imp.Several {
		cmd.Args = cobra.ArbitraryArgs
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the `FILE` to import (- for standard input)")
	cmd.Flags().StringVarP(&job.Output, "output", "o", "", "write the RRPairs to `FILE` (default: standard output)")
	index := "N"
	if imp.Item != "" {
		index = "N (its " + imp.What + ")"
	}
	cmd.Flags().StringVar(&job.Skipped, "skipped", "", "write every skipped "+imp.SkipNoun()+" to `FILE`, as JSON lines {\"index\": "+index+", \"reason\": \"...\"}")
	cmd.Flags().BoolVar(&job.Strict, "strict", false, "fail when any "+imp.SkipNoun()+" cannot be converted")
	if spec.flags != nil {
		spec.flags(cmd.Flags())
	}
	return cmd
}
