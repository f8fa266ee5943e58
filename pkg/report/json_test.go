package report

import (
	"errors"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/e2e"
)

func TestDecodeHistogram(t *testing.T) {
	foreign, err := hdrhistogram.New(1, 1000, 2).Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	h := newHistogram()
	for v := int64(1); v <= 1000; v++ {
		_ = h.RecordValue(v * 1000)
	}
	tests := []struct {
		name    string
		in      string
		count   int64
		wantErr error // nil: any error will do when fails is set
		fails   bool
	}{
		{name: "ours", in: encodeHistogram(h), count: 1000},
		{name: "empty", in: encodeHistogram(newHistogram())},
		{name: "doc example", in: "HISTFAAAACZ42pJpmSzMwMDAzAABMJoRRFybvITB/gNE4Dw/EyAAAP//YWgFag==", count: 1},
		{name: "other geometry", in: string(foreign), fails: true, wantErr: ErrGeometry},
		{name: "not base64", in: "HISTF!!!", fails: true},
		{name: "empty string", in: "", fails: true},
		{name: "truncated", in: encodeHistogram(h)[:20], fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeHistogram(tt.in)
			if tt.fails {
				if err == nil {
					t.Fatalf("got no error, want one")
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("got %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.TotalCount() != tt.count {
				t.Errorf("got %d values, want %d", got.TotalCount(), tt.count)
			}
		})
	}
}

type failWriter struct{}

var errWrite = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

// TestRenderersReturnWriteErrors: every Renderer returns the error of
// the writer it writes to.
func TestRenderersReturnWriteErrors(t *testing.T) {
	s := recorded(t, "html")
	s.E2E = &e2e.Summary{Stages: []e2e.Stage{{Name: "done"}}}
	th, _ := ParseThreshold("p99<5ms")
	Evaluate(s, []Threshold{th})
	for name, render := range map[string]Renderer{
		"json": WriteJSON, "text": WriteText, "html": WriteHTML, "hgrm": WriteHgrm, "hlog": WriteHlog, "junit": WriteJUnit, "e2e text": WriteE2EText,
	} {
		t.Run(name, func(t *testing.T) {
			if err := render(failWriter{}, s); !errors.Is(err, errWrite) {
				t.Errorf("got %v, want %v", err, errWrite)
			}
		})
	}
}
