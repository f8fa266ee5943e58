package report

import "io"

// Renderer writes a summary in one format and returns the first write
// error (vegeta's Reporter). Every renderer of a Summary has this shape,
// one a file: WriteJSON, WriteText, WriteHTML, WriteHgrm, WriteHlog,
// WriteJUnit and WriteE2EText; what one needs besides the summary travels
// in it (the HTML report's Settings).
type Renderer func(w io.Writer, s *Summary) error

var _ = []Renderer{WriteJSON, WriteText, WriteHTML, WriteHgrm, WriteHlog, WriteJUnit, WriteE2EText}
