package transport

import (
	"errors"
	"fmt"
)

// AnswerOptions say what a client keeps of an answer, whatever its
// protocol.
type AnswerOptions struct {
	// MaxBody bounds the response body a client keeps (bytes); a longer
	// answer fails as "other". 0 means DefaultMaxBody.
	MaxBody int
	// MaxHeaderBytes bounds an answer's status line and headers (HTTP/1.1:
	// the client's read buffer; HTTP/2: the header list); a longer head
	// fails the request. 0 means DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// DiscardBodies reads each answer's body and drops it as it arrives,
	// for runs where nothing reads bodies: the framing and BytesIn stay
	// exact, MaxBody does not apply (nothing is kept), and the answer's
	// Body and RawBody are nil.
	DiscardBodies bool
}

// Defaults that WithDefaults fills in.
const (
	DefaultMaxBody = 64 << 20
	// DefaultMaxHeaderBytes is the read buffer of an HTTP/1.1 client: an
	// answer's head must fit in it.
	DefaultMaxHeaderBytes = 16 << 10
)

// Validate checks o without changing it. Its errors name the flag a user
// would fix.
func (o *AnswerOptions) Validate() error {
	var errs []error
	if o.MaxBody < 0 {
		errs = append(errs, fmt.Errorf("--max-answer-body: want a number of bytes ≥ 1, got %d", o.MaxBody))
	}
	if o.MaxHeaderBytes < 0 || (o.MaxHeaderBytes > 0 && o.MaxHeaderBytes < 1024) {
		errs = append(errs, fmt.Errorf("--max-header-bytes: want at least 1024 bytes, got %d", o.MaxHeaderBytes))
	}
	return errors.Join(errs...)
}

// WithDefaults is o with its zero limits set to the defaults.
func (o AnswerOptions) WithDefaults() AnswerOptions {
	if o.MaxBody == 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.MaxHeaderBytes == 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	return o
}
