//go:build linux

package conn

import (
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/replay-dev/replay/pkg/result"
)

func TestKindOfLocalLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want result.ErrorKind
	}{
		{"EMFILE", syscall.EMFILE, result.ErrLocal},
		{"ENFILE", syscall.ENFILE, result.ErrLocal},
		{"EADDRNOTAVAIL", syscall.EADDRNOTAVAIL, result.ErrLocal},
		{"ENOBUFS", syscall.ENOBUFS, result.ErrLocal},
		{"ECONNREFUSED", syscall.ECONNREFUSED, result.ErrConnect},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", tc.err)}
			if got := dialKind(err); got != tc.want {
				t.Errorf("dialKind: got %v, want %v", got, tc.want)
			}
			if tc.want == result.ErrLocal {
				if got := KindOf(err); got != result.ErrLocal {
					t.Errorf("KindOf: got %v, want local", got)
				}
			}
		})
	}
	if got := result.ErrLocal.String(); got != "local" {
		t.Errorf("name: got %q, want local", got)
	}
	if result.ErrOther != 7 {
		t.Errorf("ErrOther moved to %d: the kinds' numbers must stay", result.ErrOther)
	}
}
