package run

import (
	"fmt"
	"os"
	"strings"

	"github.com/replay-dev/replay/pkg/transform"
)

// loadFiles reads the files the options name: the host map's @FILEs and the
// transforms file (or the built-in one), to which the transform flags
// are appended. Key and certificate files are read where they are used:
// the JWT key by the transform chain, TLS files by configure.
func (p *parsed) loadFiles(o *Options) error {
	m, err := loadHostMap(o.HTTP.HostMap)
	if err != nil {
		return err
	}
	p.hostMap = m
	p.spec, err = loadSpec(&o.Transforms, p.edits)
	return err
}

// loadHostMap builds the host map of HOST=URL items and @FILEs of such
// lines (blank lines and # comments skipped).
func loadHostMap(values []string) (map[string]string, error) {
	m := map[string]string{}
	for _, v := range values {
		if !strings.HasPrefix(v, "@") {
			if err := addHostMapEntry(m, "", v); err != nil {
				return nil, err
			}
			continue
		}
		data, err := os.ReadFile(v[1:])
		if err != nil {
			return nil, fmt.Errorf("--host-map: %w", err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if err := addHostMapEntry(m, fmt.Sprintf("%s:%d", v[1:], i+1), line); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// addHostMapEntry adds one HOST=URL to m; where says where it was read.
func addHostMapEntry(m map[string]string, where, entry string) error {
	host, url, ok := strings.Cut(entry, "=")
	if !ok || host == "" || url == "" {
		return fmt.Errorf("--host-map %s: want HOST=URL such as api.prod:443=http://127.0.0.1:8080, got %q", where, entry)
	}
	m[host] = url
	return nil
}

// loadSpec reads the transforms file, or the built-in one, and appends
// the transforms of the flags.
func loadSpec(o *Transforms, edits []edit) (*transform.Spec, error) {
	spec := &transform.Spec{}
	var err error
	switch {
	case o.File != "":
		if spec, err = transform.ReadFile(o.File); err != nil {
			return nil, fmt.Errorf("--transforms: %w", err)
		}
	case o.Builtin != nil:
		if spec, err = transform.Parse(o.Builtin, o.BuiltinName, "."); err != nil {
			return nil, err
		}
	}
	if o.Cookies != "" && o.Cookies != transform.CookiesAuto {
		if spec.Cookies != "" && spec.Cookies != o.Cookies {
			return nil, fmt.Errorf("--cookies %s: %s says cookies: %s", o.Cookies, o.File, spec.Cookies)
		}
		spec.Cookies = o.Cookies
	}
	for _, e := range edits {
		spec.Add(e.entry, e.flag)
	}
	return spec, nil
}
