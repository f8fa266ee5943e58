package loopback

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"

	"github.com/replay-dev/replay/pkg/rawhttp"
)

// ConnectDialer dials addr through the proxy at proxy with a CONNECT
// tunnel, as a client with HTTPS_PROXY does (grpc-go's WithContextDialer
// takes it): the connection it returns is the tunnel, nothing of it read.
func ConnectDialer(proxy string) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", proxy)
		if err != nil {
			return nil, err
		}
		io.WriteString(c, "CONNECT "+addr+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
		br := bufio.NewReader(c)
		m, err := rawhttp.Read(br, false, "CONNECT", nil)
		if err != nil || m.Status != 200 || br.Buffered() > 0 {
			c.Close()
			return nil, fmt.Errorf("CONNECT %s through %s: %v %v", addr, proxy, m, err)
		}
		return c, nil
	}
}
