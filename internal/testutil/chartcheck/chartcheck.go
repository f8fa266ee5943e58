// Package chartcheck renders a report page in headless Chromium and
// measures, through the DOM, where its charts draw: every text label and
// shape of every inline SVG, as the browser lays them out with its real
// fonts. It reports two text labels of a chart that overlap, a label over
// a point, and anything drawn outside its chart, and takes screenshots
// of the page. Tests of
// the packages that write HTML reports use it (report, capacity); it
// needs Debian's chromium, and skips loudly without it, unless
// REPLAY_CI=1, where it fails.
package chartcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Browser finds Debian's chromium. Without it the test skips loudly,
// unless REPLAY_CI=1 (CI installs it), where it fails.
func Browser(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("REPLAY_CI") == "1" {
		t.Fatal("chromium is not installed, and REPLAY_CI=1: .ci/run should have installed it (apt-get install chromium)")
	}
	t.Skip("SKIPPED LOUDLY: chromium is not installed; apt-get install chromium to render the HTML report in a real browser")
	return ""
}

// Layout is what the measuring script found on a page.
type Layout struct {
	Charts   int      `json:"charts"`   // svg elements
	Texts    int      `json:"texts"`    // text labels measured in them
	Shapes   int      `json:"shapes"`   // lines, polylines, rects, circles
	Height   int      `json:"height"`   // the page's height in CSS pixels
	Problems []string `json:"problems"` // overlaps and overflows, in words
	// Axes are where each chart drew its x axis, in page order.
	Axes []Axis `json:"axes"`
}

// Axis is where a chart drew its x axis, in CSS pixels from the chart's
// left edge as laid out: its step bands (rects of class "step-band",
// left and right edges) and its x ticks (texts of class "xtick", label
// and middle). Charts on one time axis draw the same.
type Axis struct {
	Chart string       `json:"chart"` // the svg's aria-label
	Bands [][2]float64 `json:"bands"`
	Ticks []Tick       `json:"ticks"`
}

// Tick is an x tick's label and where its middle was drawn.
type Tick struct {
	Label string  `json:"label"`
	X     float64 `json:"x"`
}

// measure is the script added to a copy of the page (the report itself
// has none): for each svg, the box of each text and shape as laid out;
// a shape or text outside the svg's box (half a pixel of slack), two
// texts of one svg whose boxes share more than a pixel each way, and a
// text over a point (a circle, or a shape of class "point"), are problems, as is a page wider than
// the window (a table overflowing it). It writes the Layout as JSON into
// a pre#layout.
const measure = `<script>
(function(){
  var out = {charts:0, texts:0, shapes:0, problems:[], axes:[]};
  var svgs = document.querySelectorAll("svg");
  svgs.forEach(function(svg, i){
    out.charts++;
    var name = (svg.getAttribute("aria-label") || "chart " + (i+1));
    var c = svg.getBoundingClientRect();
    var texts = [], dots = [];
    var axis = {chart: name, bands: [], ticks: []};
    svg.querySelectorAll("rect.step-band").forEach(function(el){
      var r = el.getBoundingClientRect();
      axis.bands.push([r.left - c.left, r.right - c.left]);
    });
    svg.querySelectorAll("text.xtick").forEach(function(el){
      var r = el.getBoundingClientRect();
      axis.ticks.push({label: el.textContent, x: (r.left + r.right) / 2 - c.left});
    });
    out.axes.push(axis);
    svg.querySelectorAll("text, line, polyline, rect, circle").forEach(function(el){
      var r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) return;
      var what = el.tagName + (el.textContent ? " \"" + el.textContent + "\"" : "");
      if (r.left < c.left - 0.5 || r.right > c.right + 0.5 || r.top < c.top - 0.5 || r.bottom > c.bottom + 0.5) {
        out.problems.push(name + ": " + what + " drawn outside the chart: " +
          [r.left-c.left, r.top-c.top, r.right-c.left, r.bottom-c.top].map(Math.round).join(",") +
          " in " + Math.round(c.width) + "x" + Math.round(c.height));
      }
      if (el.tagName === "text") { out.texts++; texts.push({t: el.textContent, r: r}); } else { out.shapes++; }
      if (el.tagName === "circle" || el.classList.contains("point")) dots.push({t: el.textContent, r: r});
    });
    for (var a = 0; a < texts.length; a++) for (var b = a+1; b < texts.length; b++) {
      var p = texts[a].r, q = texts[b].r;
      var w = Math.min(p.right, q.right) - Math.max(p.left, q.left), h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
      if (w > 1 && h > 1) out.problems.push(name + ": labels \"" + texts[a].t + "\" and \"" + texts[b].t + "\" overlap");
    }
    texts.forEach(function(x){ dots.forEach(function(d){
      var w = Math.min(x.r.right, d.r.right) - Math.max(x.r.left, d.r.left), h = Math.min(x.r.bottom, d.r.bottom) - Math.max(x.r.top, d.r.top);
      if (w > 1 && h > 1) out.problems.push(name + ": label \"" + x.t + "\" covers the point \"" + d.t + "\"");
    }); });
  });
  var doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth + 1) out.problems.push("the page is " + doc.scrollWidth + " pixels wide in a window of " + doc.clientWidth + ": something overflows it");
  out.height = Math.ceil(doc.scrollHeight);
  var pre = document.createElement("pre");
  pre.id = "layout";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>`

// args are the flags of a quiet, offline headless run with its own profile.
func args(dir string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--no-first-run", "--hide-scrollbars", "--user-data-dir=" + filepath.Join(dir, "profile")}
}

// Measure loads the HTML page in browser, width CSS pixels wide, with the
// measuring script added to a copy in dir, and returns what it found.
func Measure(ctx context.Context, browser, dir, page string, width int) (*Layout, error) {
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	html := string(b)
	i := strings.LastIndex(html, "</body>")
	if i < 0 {
		return nil, fmt.Errorf("%s: no </body>", page)
	}
	measured := filepath.Join(dir, "measured-"+filepath.Base(page))
	if err := os.WriteFile(measured, []byte(html[:i]+measure+html[i:]), 0o644); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a first start on a loaded machine is slow
	defer cancel()
	dom, err := exec.CommandContext(ctx, browser, append(args(dir), fmt.Sprintf("--window-size=%d,1000", width), "--dump-dom", "file://"+measured)...).Output()
	if err != nil {
		return nil, fmt.Errorf("chromium --dump-dom %s: %w", measured, err)
	}
	s := string(dom)
	start := strings.Index(s, `<pre id="layout">`)
	if start < 0 {
		return nil, fmt.Errorf("chromium ran no measuring script on %s", page)
	}
	s = s[start+len(`<pre id="layout">`):]
	s = s[:strings.Index(s, "</pre>")]
	var l Layout
	if err := json.Unmarshal([]byte(unescape(s)), &l); err != nil {
		return nil, fmt.Errorf("the layout of %s: %w", page, err)
	}
	return &l, nil
}

// unescape undoes the HTML escaping of a pre's text in a dumped DOM.
func unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'", "&amp;", "&").Replace(s)
}

// Screenshot writes a PNG of the whole page, width by height CSS pixels,
// to out.
func Screenshot(ctx context.Context, browser, dir, page, out string, width, height int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, append(args(dir), fmt.Sprintf("--window-size=%d,%d", width, height), "--screenshot="+out, "file://"+page)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("chromium --screenshot %s: %w\n%s", page, err, b)
	}
	return nil
}

// Check writes html as NAME.html in a temporary directory, measures it
// width pixels wide and fails t for each problem, and for fewer charts
// than want. With REPLAY_SCREENSHOTS=DIR it also leaves a screenshot of
// the whole page as DIR/NAME.png, to look at.
func Check(t *testing.T, name, html string, width, want int) *Layout {
	t.Helper()
	browser := Browser(t)
	dir := t.TempDir()
	page := filepath.Join(dir, name+".html")
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Measure(context.Background(), browser, dir, page, width)
	if err != nil {
		t.Fatal(err)
	}
	if l.Charts < want || l.Texts == 0 || l.Shapes == 0 {
		t.Errorf("%s: %d charts with %d labels and %d shapes, want at least %d charts", name, l.Charts, l.Texts, l.Shapes, want)
	}
	for _, p := range l.Problems {
		t.Errorf("%s: %s", name, p)
	}
	if shots := os.Getenv("REPLAY_SCREENSHOTS"); shots != "" {
		out, err := filepath.Abs(filepath.Join(shots, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		if err := Screenshot(context.Background(), browser, dir, page, out, width, l.Height+20); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot of %s: %s", name, out)
	}
	return l
}
