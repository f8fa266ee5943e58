package run

import (
	"fmt"

	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// fdMargin is the open files a run needs beside its VUs' connections: the
// standard streams, the traffic file, reports, logs, listeners and sinks,
// the runtime's poller.
const fdMargin = 64

// fileLimit returns the open-file limit (RLIMIT_NOFILE): the soft limit
// that applies, the hard one it may be raised to; ok false when unknown.
type fileLimit func() (soft, hard uint64, ok bool)

// checkOpenFiles refuses, before any traffic, a run whose VUs could need
// more connections than the process may open: each VU holds one (with
// --streams, each group of streams VUs shares one), and a VU that finds
// no descriptor left fails every request (errors "local"). An open
// model's pool cap that the user did not set (the default --max-vus) is
// lowered to fit instead, with a warning.
func checkOpenFiles(cfg *vu.Config, streams, userMaxVUs int, limit fileLimit, log zerolog.Logger) error {
	streams = max(streams, 1)
	conns := func(vus int) uint64 { return uint64((vus + streams - 1) / streams) }
	soft, hard, ok := limit()
	if !ok || conns(cfg.MostVUs())+fdMargin <= soft {
		return nil
	}
	room := 0
	if soft > fdMargin {
		room = int(soft-fdMargin) * streams
	}
	if cfg.Model != schedule.Closed && userMaxVUs == 0 && cfg.VUs <= room {
		log.Warn().Int("max_vus", room).Int("default", cfg.MaxVUs).Uint64("nofile_soft", soft).Uint64("nofile_hard", hard).
			Msg("the open-file limit (ulimit -n) caps the pool of VUs below its default; set --max-vus or raise the limit")
		cfg.MaxVUs = room
		return nil
	}
	flag := "--vus"
	if cfg.Model != schedule.Closed && cfg.MaxVUs > cfg.VUs {
		flag = "--max-vus"
	}
	if cfg.Model == schedule.Closed && len(cfg.Stages) > 0 && cfg.MostVUs() > cfg.VUs {
		flag = "--stages"
	}
	need := conns(cfg.MostVUs()) + fdMargin
	how := fmt.Sprintf("raise it with ulimit -n %d (the hard limit is %d)", need, hard)
	if need > hard {
		how = fmt.Sprintf("the hard limit is %d: raise it as root (ulimit -Hn, /etc/security/limits.conf, systemd LimitNOFILE=)", hard)
	}
	each := "one connection each"
	if streams > 1 {
		each = fmt.Sprintf("one connection each %d (--streams)", streams)
	}
	return fmt.Errorf("%s: %d VUs need up to %d open files (%s, and %d for the run), but the open-file limit (RLIMIT_NOFILE) is %d; "+
		"%s, or the container's (docker run --ulimit nofile=%d:%d, or the runtime's default in Kubernetes), or run fewer VUs",
		flag, cfg.MostVUs(), need, each, fdMargin, soft, how, need, need)
}
