package mock

import (
	"errors"
	"fmt"
	"sort"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// openFile opens the traffic file with filter, which keeps the OUT pairs
// unless a Keep rule chooses the direction. A file left with no pair is
// refused with its counts by direction and the flag that chooses.
func openFile(path string, filter *rrpair.Filter) (*rrpair.File, error) {
	fl := &rrpair.Filter{}
	if filter != nil {
		*fl = *filter
	}
	chosen := false
	for _, r := range fl.Keep {
		chosen = chosen || r.Key == "direction"
	}
	if !chosen {
		out, _ := rrpair.ParseRule("direction=OUT")
		fl.Keep = append(append([]rrpair.Rule(nil), fl.Keep...), out)
	}
	f, err := rrpair.Open(path, rrpair.Options{Filter: fl, Signatures: true})
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, rrpair.ErrAllFiltered) && !errors.Is(err, rrpair.ErrAllSkipped) {
		return nil, err
	}
	in, out, cerr := countDirections(path)
	if cerr != nil {
		return nil, err
	}
	if !chosen {
		return nil, fmt.Errorf("%s: no OUT pair to answer with (the file holds %d IN pairs and %d OUT, before --keep/--drop): "+
			"replay mock answers a service's recorded calls to its dependencies (direction OUT, as replay record --forward writes them); "+
			"--keep direction=IN answers as the service itself, from its own recorded traffic", path, in, out)
	}
	return nil, fmt.Errorf("%s: no pair left after --keep and --drop (the file holds %d IN pairs and %d OUT)", path, in, out)
}

// countDirections counts the HTTP pairs of a file by direction.
func countDirections(path string) (in, out int, err error) {
	both, _ := rrpair.ParseRule("direction=IN,OUT")
	f, err := rrpair.Open(path, rrpair.Options{Filter: &rrpair.Filter{Keep: []rrpair.Rule{both}}, Signatures: true})
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	cur := f.NewCursor()
	var p rrpair.Pair
	for i := range f.Len() {
		if err := cur.Decode(i, &p); err != nil {
			return 0, 0, err
		}
		if p.IsOut() {
			out++
		} else {
			in++
		}
	}
	return in, out, nil
}

// hostList is the recorded hosts, sorted.
func (ix *index) hostList() []string {
	out := make([]string, 0, len(ix.hosts))
	for h := range ix.hosts {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}
