// Package version says which replay this is: its version (the one a
// release build sets, else the module's from the build info: a tag with
// go install module@version, "(devel)" from a checkout), the VCS revision
// and whether the checkout was modified when built from one, the Go
// version, the operating system and the architecture.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is what Get reads.
type Info struct {
	Version  string // v1.2.3, or (devel)
	Revision string // the VCS revision; "" when not built from a checkout
	Time     string // the revision's time (RFC 3339); "" without one
	Modified bool   // the checkout had changes not committed
	Go       string // go1.26.8
	OS, Arch string
}

// Get reads the build's information; release, when not "" or "dev", is
// the version a release build set (-ldflags "-X main.release=v1.2.3") and
// wins over the module's.
func Get(release string) Info {
	i := Info{Version: "(devel)", Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" {
			i.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Revision = s.Value
			case "vcs.time":
				i.Time = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if release != "" && release != "dev" {
		i.Version = release
	}
	return i
}

// String is the one line replay version prints:
//
//	replay v1.2.3 (revision 1b8e0912c4d1, 2026-11-26T02:00:00Z, modified) go1.26.8 linux/amd64
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "replay %s", i.Version)
	if i.Revision != "" {
		var parts []string
		parts = append(parts, "revision "+i.Revision[:min(12, len(i.Revision))])
		if i.Time != "" {
			parts = append(parts, i.Time)
		}
		if i.Modified {
			parts = append(parts, "modified")
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, " %s %s/%s", i.Go, i.OS, i.Arch)
	return b.String()
}
