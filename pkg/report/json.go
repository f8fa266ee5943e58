package report

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes s as indented JSON followed by a newline: the summary
// JSON of docs/design.md. It returns the first encoding or write error.
func WriteJSON(w io.Writer, s *Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}
