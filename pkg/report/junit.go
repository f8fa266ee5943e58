package report

import (
	"encoding/xml"
	"io"
)

// WriteJUnit writes the threshold results as JUnit XML: one test case per
// threshold, for CI systems that display it.
func WriteJUnit(w io.Writer, s *Summary) error {
	type failure struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Failure   *failure `xml:"failure,omitempty"`
	}
	type testsuite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	suite := testsuite{Name: "replay thresholds", Tests: len(s.Thresholds)}
	for _, r := range s.Thresholds {
		c := testcase{Name: r.Name(), Classname: "replay"}
		if !r.Pass {
			suite.Failures++
			c.Failure = &failure{Message: r.MeasuredText(-1)}
		}
		suite.Cases = append(suite.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(suite); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
