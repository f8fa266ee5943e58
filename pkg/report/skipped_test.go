package report

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/rrpair"
)

func skippedSummary(t *testing.T, sk *Skipped) *Summary {
	s := recorded(t, "closed")
	s.Skipped = sk
	return s
}

func TestSkippedInJSONAndText(t *testing.T) {
	sk := &Skipped{Protocol: map[string]int{"postgres": 12, "mysql": 2}, ResponseOnly: 3, DirectionOut: 7}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, skippedSummary(t, sk)); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Skipped json.RawMessage `json:"skipped"`
	}
	if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	json.Compact(&compact, raw.Skipped)
	if want := `{"protocol":{"mysql":2,"postgres":12},"response_only":3,"direction_out":7}`; compact.String() != want {
		t.Errorf("skipped JSON: got %s, want %s", compact.String(), want)
	}
	back, err := ReadSummary(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Skipped, sk) {
		t.Errorf("read back %+v, want %+v", back.Skipped, sk)
	}

	buf.Reset()
	if err := WriteText(&buf, skippedSummary(t, sk)); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^Skipped +\[lines of the file not replayed\] +24: postgres 12, mysql 2, response_only 3, direction_out 7$`).Match(buf.Bytes()) {
		t.Errorf("text report lacks the Skipped line:\n%s", buf.String())
	}

	buf.Reset()
	if err := WriteJSON(&buf, skippedSummary(t, nil)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `"skipped"`) {
		t.Error("a summary with nothing skipped has a skipped section")
	}
	buf.Reset()
	WriteText(&buf, skippedSummary(t, nil))
	if strings.Contains(buf.String(), "Skipped") {
		t.Error("a summary with nothing skipped has a Skipped line")
	}
}

// TestMergeTakesSkippedOnce: shards of one file report the same counts;
// the merge keeps them, not their sum. A sink's summary, without the
// section, changes nothing.
func TestMergeTakesSkippedOnce(t *testing.T) {
	shard := func() *Summary {
		return skippedSummary(t, &Skipped{Protocol: map[string]int{"postgres": 12}, Signature: 4, ResponseOnly: 3, DirectionOut: 7})
	}
	var parts []*Summary
	for _, s := range []*Summary{shard(), shard(), shard(), skippedSummary(t, nil)} {
		var buf bytes.Buffer
		if err := WriteJSON(&buf, s); err != nil {
			t.Fatal(err)
		}
		back, err := ReadSummary(&buf)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, back)
	}
	m, err := Merge(parts)
	if err != nil {
		t.Fatal(err)
	}
	want := shard().Skipped
	if !reflect.DeepEqual(m.Skipped, want) {
		t.Errorf("merged skipped: got %+v, want %+v", m.Skipped, want)
	}
	if m.Requests != 4*parts[0].Requests {
		t.Errorf("requests: got %d, want %d (the counts of requests add)", m.Requests, 4*parts[0].Requests)
	}
	// Runs over different files: the largest count of each kind, never a sum.
	other := skippedSummary(t, &Skipped{Protocol: map[string]int{"postgres": 5, "redis": 1}, DirectionOut: 9})
	m, err = Merge([]*Summary{shard(), other})
	if err != nil {
		t.Fatal(err)
	}
	want = &Skipped{Protocol: map[string]int{"postgres": 12, "redis": 1}, Signature: 4, ResponseOnly: 3, DirectionOut: 9}
	if !reflect.DeepEqual(m.Skipped, want) {
		t.Errorf("merged skipped: got %+v, want %+v", m.Skipped, want)
	}
	if m, _ := Merge([]*Summary{skippedSummary(t, nil), skippedSummary(t, nil)}); m.Skipped != nil {
		t.Errorf("merged skipped of summaries without one: got %+v, want none", m.Skipped)
	}
}

func TestWriteInspectShowsSkipped(t *testing.T) {
	st := &rrpair.Stats{File: "speedscale.jsonl", Pairs: 3, Methods: map[string]int{"GET": 3},
		Skipped: rrpair.Skipped{Protocol: map[string]int{"postgres": 2, "mysql": 1}, ResponseOnly: 1, DirectionOut: 1}}
	var buf bytes.Buffer
	if err := WriteInspect(&buf, st); err != nil {
		t.Fatal(err)
	}
	want := "Skipped          5 lines, not HTTP requests to replay: postgres 2, mysql 1, response_only 1, direction_out 1\n"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("inspect lacks %q:\n%s", want, buf.String())
	}
	buf.Reset()
	st.Skipped = rrpair.Skipped{}
	WriteInspect(&buf, st)
	if strings.Contains(buf.String(), "Skipped") {
		t.Errorf("inspect of a file with nothing skipped has a Skipped line:\n%s", buf.String())
	}
}

func TestWriteInspectShowsSignatureLines(t *testing.T) {
	st := &rrpair.Stats{File: "reaction.jsonl", Pairs: 16, Methods: map[string]int{"GET": 16}, SignatureLines: 16,
		UnreadSignatureKeys: map[string]int{"5": 2}}
	var buf bytes.Buffer
	if err := WriteInspect(&buf, st); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Signature lines          16: answers whose request is a Speedscale signature (replay mock serves them; replay run skips them: no request to send)\n",
		"Signature keys not read  5:2 (replay mock does not serve these lines)\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("inspect lacks %q:\n%s", want, buf.String())
		}
	}
}
