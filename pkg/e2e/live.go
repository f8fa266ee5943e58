package e2e

// StageCount is what one stage has seen so far, for live metrics.
type StageCount struct {
	Name       string
	Unique     int64 // events seen, each once
	Duplicates int64 // deliveries of an event seen already
}

// LiveStages returns what each stage has seen so far, in the order the
// stages were first seen. Safe during the run: it takes the tracker's
// lock, as the sinks do.
func (t *Tracker) LiveStages() []StageCount {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]StageCount, 0, len(t.stages))
	for _, st := range t.stages {
		out = append(out, StageCount{Name: st.name, Unique: st.unique, Duplicates: st.dups})
	}
	return out
}
