#!/usr/bin/env bash
# bigcapture.sh BIN — the speed and memory check of replay import pcap on a
# large capture (make bigcapture; not run in CI). It writes a ~1 GiB pcap
# outside the repository (a service's busy hour as tcpdump -s 0 writes it:
# 10,000 keep-alive connections, 100 at a time, 100 exchanges each, a GET
# with a browser's headers answered with ~500 bytes of JSON or a POST
# answered 201, every packet ACKed: 1,000,000 requests), imports it, and
# reports:
#   - the wall time (target: under a minute)
#   - the peak resident memory of the import (target: under 300 MB)
# The capture is written by this script (Python's struct, by hand), not by
# replay's own test writer: another writer of the format.
# With TLS=1 (make bigcapture TLS=1) it checks --keylog instead: a ~200 MB
# capture of real TLS (Go's client and server on loopback, TLS 1.3 and 1.2,
# HTTP/1.1 and HTTP/2, through the tests' recording proxy:
# TestWriteBigTLSCapture) and its key log, imported with --keylog and read
# by tshark with the same key log (when installed), side by side: wall
# time and peak resident memory of each, and the requests each found.
# Env: CONNS=10000 PER_CONN=100 AT_ONCE=100 WORK=<dir, default a fresh /tmp dir>
#      TLS=1 TLS_MB=200
set -euo pipefail
BIN=${1:?usage: bigcapture.sh path/to/replay}
CONNS=${CONNS:-10000}
PER_CONN=${PER_CONN:-100}
AT_ONCE=${AT_ONCE:-100}
WORK=${WORK:-$(mktemp -d /tmp/replay-bigcapture.XXXXXX)}
mkdir -p "$WORK"
FILE=$WORK/big.pcap

# measure NAME CMD...: runs CMD under /usr/bin/time -v, prints its wall
# time, CPU and peak resident memory (on the script's own output, fd 3:
# CMD's may be redirected).
exec 3>&1
measure() {
  local name=$1; shift
  /usr/bin/time -v "$@" 2> "$WORK/$name.err" || { cat "$WORK/$name.err"; exit 1; }
  local wall rss cpu
  wall=$(grep 'Elapsed (wall clock)' "$WORK/$name.err" | awk '{print $NF}')
  rss=$(grep 'Maximum resident set size' "$WORK/$name.err" | awk '{print $NF}')
  cpu=$(grep 'Percent of CPU' "$WORK/$name.err" | awk '{print $NF}')
  echo "$name: wall $wall, CPU $cpu, peak resident $((rss >> 10)) MiB" >&3
}

if [ "${TLS:-}" = 1 ]; then
  if [ ! -s "$WORK/tls.pcap" ]; then
    echo "writing a ${TLS_MB:-200} MB TLS capture and its key log to $WORK"
    REPLAY_BIG_TLS=$WORK REPLAY_BIG_TLS_MB=${TLS_MB:-200} go test -count=1 -timeout 30m -run TestWriteBigTLSCapture -v ./pkg/pcap | grep 'wrote'
  fi
  cat "$WORK/tls.pcap" > /dev/null   # warm the page cache
  echo "capture: $(( $(stat -c %s "$WORK/tls.pcap") >> 20 )) MiB, key log: $(wc -l < "$WORK/keys.log") lines"
  measure replay "$BIN" import pcap "$WORK/tls.pcap" --keylog "$WORK/keys.log" -o "$WORK/traffic.jsonl"
  grep '^replay:' "$WORK/replay.err"
  if command -v tshark > /dev/null; then
    measure tshark tshark -r "$WORK/tls.pcap" -n -o "tls.keylog_file:$WORK/keys.log" -Y 'http.request || http2.headers.method' \
      -T fields -E aggregator=/s -e http.request.method -e http2.headers.method > "$WORK/tshark.txt"
    echo "tshark: $(tr '\t ' '\n\n' < "$WORK/tshark.txt" | grep -c .) requests"
  else
    echo "tshark is not installed: no comparison (apt-get install tshark)"
  fi
  echo "(files in $WORK; delete them when done)"
  exit 0
fi

if [ ! -s "$FILE" ]; then
  echo "writing $CONNS connections × $PER_CONN exchanges to $FILE"
  python3 - "$FILE" "$CONNS" "$PER_CONN" "$AT_ONCE" <<'PY'
import struct, sys
path, conns, per_conn, at_once = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01
server_ip, server_port = bytes([10, 0, 0, 5]), 8080
mac = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00"
headers = (b"Host: shop.example:8080\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/146.0\r\n"
           b"Accept: application/json\r\nAccept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate\r\n"
           b"Cookie: sid=8f14e45fceea167a5a36dedd4bea2543; theme=dark\r\n")
t = [1796112000 * 1000000]  # microseconds
out = open(path, "wb", buffering=8 << 20)
out.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))

def packet(src, sport, dst, dport, seq, ack, flags, payload=b""):
    t[0] += 3
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xffffffff, ack & 0xffffffff, 5 << 4, flags, 65535, 0, 0)
    frame = mac + ip + tcp + payload
    out.write(struct.pack("<IIII", t[0] // 1000000, t[0] % 1000000, len(frame), len(frame)))
    out.write(frame)

n = 0
for group in range(0, conns, at_once):
    cs = []
    for i in range(group, min(group + at_once, conns)):
        ip = bytes([10, 1, i >> 8 & 255, i & 255])
        c = {"ip": ip, "port": 20000 + i % 40000, "cseq": 1000, "sseq": 90000}
        packet(ip, c["port"], server_ip, server_port, c["cseq"] - 1, 0, SYN)
        packet(server_ip, server_port, ip, c["port"], c["sseq"] - 1, c["cseq"], SYN | ACK)
        packet(ip, c["port"], server_ip, server_port, c["cseq"], c["sseq"], ACK)
        cs.append(c)
    for _ in range(per_conn):
        for c in cs:
            n += 1
            if n % 4 == 0:
                body = b'{"product":%d,"quantity":1,"note":"%s"}' % (n, b"x" * 80)
                req = b"POST /cart/items HTTP/1.1\r\n" + headers + b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body
                res = b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\nLocation: /cart/items/%d\r\n\r\n" % n
            else:
                req = b"GET /products/%d?fields=all HTTP/1.1\r\n" % n + headers + b"\r\n"
                body = b'{"id":%d,"name":"product %d","price":{"amount":1999,"currency":"EUR"},"stock":12,"description":"%s"}' % (n, n, b"lorem ipsum " * 30)
                res = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nCache-Control: max-age=60\r\n\r\n" % len(body) + body
            packet(c["ip"], c["port"], server_ip, server_port, c["cseq"], c["sseq"], PSH | ACK, req)
            c["cseq"] += len(req)
            packet(server_ip, server_port, c["ip"], c["port"], c["sseq"], c["cseq"], ACK)
            packet(server_ip, server_port, c["ip"], c["port"], c["sseq"], c["cseq"], PSH | ACK, res)
            c["sseq"] += len(res)
            packet(c["ip"], c["port"], server_ip, server_port, c["cseq"], c["sseq"], ACK)
    for c in cs:
        packet(c["ip"], c["port"], server_ip, server_port, c["cseq"], c["sseq"], FIN | ACK)
        packet(server_ip, server_port, c["ip"], c["port"], c["sseq"], c["cseq"] + 1, FIN | ACK)
        packet(c["ip"], c["port"], server_ip, server_port, c["cseq"] + 1, c["sseq"] + 1, ACK)
out.close()
print("requests:", n)
PY
fi
bytes=$(stat -c %s "$FILE")
cat "$FILE" > /dev/null   # warm the page cache
echo "capture: $((bytes >> 20)) MiB"
measure import "$BIN" import pcap "$FILE" -o "$WORK/traffic.jsonl"
grep '^replay:' "$WORK/import.err"
echo "output $(( $(stat -c %s "$WORK/traffic.jsonl") >> 20 )) MiB"
echo "(files in $WORK; delete them when done)"
