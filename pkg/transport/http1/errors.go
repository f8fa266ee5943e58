package http1

import (
	"errors"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/valyala/fasthttp"
)

// classify names why a request failed. sockErr is the socket's own error
// when known (fasthttp reports any failure before the first byte as EOF);
// err is what the write or the response parser returned. After Interrupt
// every failure is a cancellation.
func (c *Client) classify(sockErr, err error) result.ErrorKind {
	if c.line.Cut() {
		return result.ErrCancelled
	}
	for _, e := range [2]error{sockErr, err} {
		if e == nil {
			continue
		}
		if k := kindOf(e); k != result.ErrOther {
			return k
		}
	}
	return result.ErrOther
}

// kindOf is the connection layer's kind of err (conn.KindOf), with
// fasthttp's own errors on top.
func kindOf(err error) result.ErrorKind {
	if k := conn.KindOf(err); k != result.ErrOther {
		return k
	}
	switch {
	case errors.Is(err, fasthttp.ErrTimeout):
		return result.ErrTimeout
	case errors.Is(err, fasthttp.ErrConnectionClosed):
		return result.ErrEOF
	}
	return result.ErrOther
}
