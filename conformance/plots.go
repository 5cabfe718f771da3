package conformance

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/octant-kv/octant/harness"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The "Error distributions" section of report.md answers one question per op and tier: how close
// to its bound did each case come? The quantity is CaseResult.BoundErr, the case's worst
// |error| / bound (the largest, over the output's elements, of |output − the declared profile's
// model| over that element's bound; a case passes at ≤ 1). Where it comes from (fuzz, the checks):
//
//   - decode, prefill: oracle.ProfileResult.Check. 0 when every compared element was exact (a bin
//     of its own, never drawn on the log axis); a case that compared nothing (CaseResult.Judged
//     0: an empty call) is counted in the caption, not plotted. +Inf when an element differs where
//     the bound is 0, or is NaN.
//   - reduce: the worst over the elements with a non-zero error and bound, so 0 again means
//     "every element exact".
//   - rotate: 0 always (the check is bit for bit); store: never reported, so 0 (the check accepts a
//     stored slot identical to the oracle's, or different only by a tie docs/format.md §10 allows).
//     These ops have no distribution to draw: one sentence each.
//
// A case that failed another check (padding, canaries, a race, an error status, a missing tier)
// stopped before its ratio was measured, so its BoundErr (0, or the ratio of a run the later check
// refused) says nothing about closeness to the bound: it is counted, not plotted.

// ratioUnit is the ratios of one op/tier.
type ratioUnit struct {
	Key, Op string
	Run     int       // cases run (not NotSupported)
	Zero    int       // ratio exactly 0 with elements compared: every compared element exact
	Nothing int       // cases that compared no element (Judged 0): not plotted
	Within  int       // 0 < ratio ≤ 1
	Over    int       // finite ratio > 1 (quality warnings and bound failures)
	NonFin  int       // +Inf or NaN ratio (fails)
	Other   int       // failed another check: no ratio to plot
	Pos     []float64 // the finite ratios > 0, sorted
	Exact   bool      // store or rotate with every finite ratio 0: an exact check, no distribution
	Passed  int       // cases that did not fail (for the exact ops' sentence)
}

// Plotted is how many cases the unit's plot counts (every bar).
func (u *ratioUnit) Plotted() int { return u.Zero + len(u.Pos) + u.NonFin }

// Median is the median of the finite ratios > 0 (NaN when there are none).
func (u *ratioUnit) Median() float64 {
	n := len(u.Pos)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return u.Pos[n/2]
	}
	return (u.Pos[n/2-1] + u.Pos[n/2]) / 2
}

// Max is the largest finite ratio (NaN when there are none).
func (u *ratioUnit) Max() float64 {
	if len(u.Pos) == 0 {
		return math.NaN()
	}
	return u.Pos[len(u.Pos)-1]
}

// ratioUnits groups the runtime cases by op/tier, sorted by op/tier.
func ratioUnits(cases []CaseResult) []*ratioUnit {
	per := map[string]*ratioUnit{}
	for _, r := range cases {
		el := strings.SplitN(r.Path, "/", 3)
		if len(el) < 3 || el[0] == "isa" || r.Status == harness.NotSupported {
			continue
		}
		k := el[0] + "/" + el[1]
		u := per[k]
		if u == nil {
			u = &ratioUnit{Key: k, Op: el[0]}
			per[k] = u
		}
		u.Run++
		x := r.BoundErr
		fin := !math.IsNaN(x) && !math.IsInf(x, 0)
		if r.Status != harness.Fail {
			u.Passed++
		}
		switch {
		case r.Status == harness.Fail && fin && x <= 1:
			u.Other++
		case !fin:
			u.NonFin++
		case x <= 0 && r.Judged == 0 && r.Status != harness.Fail:
			u.Nothing++
		case x <= 0:
			u.Zero++
		default:
			u.Pos = append(u.Pos, x)
			if x > 1 {
				u.Over++
			} else {
				u.Within++
			}
		}
	}
	out := make([]*ratioUnit, 0, len(per))
	for _, u := range per {
		sort.Float64s(u.Pos)
		u.Exact = (u.Op == "store" || u.Op == "rotate") && len(u.Pos) == 0
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// exactSentence is the report's line for an op checked exactly (store, rotate).
func (u *ratioUnit) exactSentence() string {
	var s string
	if u.Op == "rotate" {
		s = fmt.Sprintf("%s: bit-exact, %d of %d cases identical to the oracle, bit for bit", u.Key, u.Passed, u.Run)
	} else {
		s = fmt.Sprintf("%s: exact (no error bound), %d of %d cases accepted: every stored slot identical to the oracle's quantization, or different only by a tie docs/format.md §10 allows", u.Key, u.Passed, u.Run)
	}
	if f := u.Run - u.Passed; f > 0 {
		s += fmt.Sprintf("; %d failed (listed under Failures)", f)
	}
	return s + "."
}

// caption is the report's text beside a bounded op's plot: the numbers the plot shows.
func (u *ratioUnit) caption() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d cases plotted", u.Plotted())
	if len(u.Pos) > 0 {
		fmt.Fprintf(&b, "; over the %d with a finite ratio > 0: median %s, max %s", len(u.Pos), num(u.Median()), num(u.Max()))
	}
	fmt.Fprintf(&b, ". %d at exactly 0 (every compared element exact)", u.Zero)
	if u.Nothing > 0 {
		fmt.Fprintf(&b, "; %d compared no element (not plotted)", u.Nothing)
	}
	b.WriteString(". ")
	if out := u.Over + u.NonFin; out == 0 {
		b.WriteString("None outside the bound.")
	} else {
		fmt.Fprintf(&b, "%d outside the bound: %d with a finite ratio > 1, %d with a ratio of +Inf or NaN.", out, u.Over, u.NonFin)
	}
	if u.Other > 0 {
		fmt.Fprintf(&b, " %d failed another check (padding, canaries, a race, an error status; listed under Failures): no ratio, not plotted.", u.Other)
	}
	return b.String()
}

func num(x float64) string { return fmt.Sprintf("%.3g", x) }

// plotSection writes one PNG per bounded op/tier into dir and returns report.md's "Error
// distributions" section ("" when no runtime case ran).
func (c *Certificate) plotSection(dir string) (string, error) {
	units := ratioUnits(c.Cases)
	if len(units) == 0 {
		return "", nil
	}
	// One x range per op, so its tiers' plots compare side by side.
	ranges := map[string][2]float64{}
	for _, u := range units {
		if u.Exact || len(u.Pos) == 0 {
			continue
		}
		r, ok := ranges[u.Op]
		lo, hi := logRange(u.Pos)
		if ok {
			lo, hi = min(lo, r[0]), max(hi, r[1])
		}
		ranges[u.Op] = [2]float64{lo, hi}
	}
	var b strings.Builder
	b.WriteString("\n## Error distributions\n\n" +
		"How close to its bound each case came, per op and tier: the case's **worst |error| / bound** — the largest,\n" +
		"over its output elements, of |output − the declared profile's model| divided by that element's bound\n" +
		"(docs/bounds.md). A case passes at ≤ 1 (dashed line). The x axis is logarithmic, a bar per quarter decade.\n" +
		"Two bars stand apart: **0**, cases with no element to compare (only padding rows, an empty call) or\n" +
		"every compared element exact — the ratio cannot tell these apart; **+Inf/NaN**, cases whose output\n" +
		"was NaN or differed where the bound is 0: they fail. Cases that failed another check have no ratio and\n" +
		"are counted, not plotted. Ops checked exactly (store, rotate) have nothing to plot: one line each.\n\n")
	for _, u := range units {
		switch {
		case u.Exact:
			fmt.Fprintf(&b, "- %s\n\n", u.exactSentence())
		case u.Plotted() == 0:
			fmt.Fprintf(&b, "- %s: no case with a ratio; %d failed another check (listed under Failures).\n\n", u.Key, u.Other)
		default:
			lo, hi := -3.0, 0.75
			if r, ok := ranges[u.Op]; ok {
				lo, hi = r[0], r[1]
			}
			name := "errors-" + strings.ReplaceAll(u.Key, "/", "-") + ".png"
			if err := ratioPlot(u, c.Arch, lo, hi, filepath.Join(dir, name)); err != nil {
				return "", fmt.Errorf("plot %s: %w", u.Key, err)
			}
			fmt.Fprintf(&b, "**%s**: %s\n\n![%s: worst |error| / bound per case](%s)\n\n", u.Key, u.caption(), u.Key, name)
		}
	}
	return b.String(), nil
}

const (
	binsPerDecade = 4
	minDecades    = 3 // the axis shows at least 0.001 … 1, so plots look alike and leave room for the legend
	maxBelow      = 8 // ratios below 1e-8 share the first bar
	maxAbove      = 4 // ratios above 1e4 share the last bar (the caption gives the max)
)

// logRange is the log10 range of the x axis for ratios xs (> 0, finite): whole decades from
// 1e-8 … 1e-3 up to a quarter decade from 10^0.75 … 1e4, so the bound line at 1 is always inside
// the frame with room for failing bars on its right.
func logRange(xs []float64) (lo, hi float64) {
	mn, mx := math.Inf(1), 0.0
	for _, x := range xs {
		mn, mx = min(mn, x), max(mx, x)
	}
	lo = min(max(math.Floor(math.Log10(mn)), -maxBelow), -minDecades)
	hi = min(max(math.Ceil(math.Log10(mx)*binsPerDecade)/binsPerDecade, 0.75), maxAbove)
	return lo, hi
}

var (
	colWithin = color.RGBA{R: 0x4c, G: 0x72, B: 0xb0, A: 0xff}
	colOver   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colNonFin = color.RGBA{R: 0x80, G: 0x00, B: 0x00, A: 0xff}
	colZero   = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
)

// ratioPlot draws u's histogram on the log10 x range [lo, hi] into path: quarter-decade bars
// (blue within the bound, red outside), a grey bar "0" to the left and a dark red bar "+Inf/NaN"
// to the right, the bound as a dashed line at 1, integer case counts on the y axis.
func ratioPlot(u *ratioUnit, arch string, lo, hi float64, path string) error {
	const w = 1.0 / binsPerDecade
	nb := int(math.Round((hi - lo) * binsPerDecade))
	counts := make([]float64, nb)
	for _, x := range u.Pos {
		// Bars are closed on the right, so a ratio of exactly 1 (passing) is in the last blue bar.
		i := int(math.Ceil((math.Log10(x)-lo)*binsPerDecade)) - 1
		counts[min(max(i, 0), nb-1)]++
	}
	var within, over []plotter.HistogramBin
	for i, n := range counts {
		bin := plotter.HistogramBin{Min: lo + float64(i)*w, Max: lo + float64(i+1)*w, Weight: n}
		if bin.Max <= 1e-9 {
			within = append(within, bin)
		} else {
			over = append(over, bin)
		}
	}
	gap := max(0.8, 0.1*(hi-lo)) // a wide axis packs its tick labels closer: keep "+Inf/NaN" clear
	zeroX, nonFinX := lo-gap, hi+gap
	special := func(x float64, n int) []plotter.HistogramBin {
		return []plotter.HistogramBin{{Min: x - 0.25, Max: x + 0.25, Weight: float64(n)}}
	}
	top := max(1, float64(u.Zero), float64(u.NonFin))
	for _, n := range counts {
		top = max(top, n)
	}
	clamped := len(u.Pos) > 0 && math.Log10(u.Pos[0]) < lo
	ymax := math.Ceil(top * 1.5) // headroom for the legend and the bound's label

	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s on %s: worst |error| / bound per case", u.Key, arch)
	p.Title.Padding = vg.Points(10)
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "worst |error| / bound per case (log scale; a case passes at ≤ 1)"
	p.Y.Label.Text = "cases"
	p.X.Min, p.X.Max = zeroX-0.45, nonFinX+0.45
	p.Y.Min, p.Y.Max = 0, ymax
	p.X.Tick.Marker = plot.TickerFunc(func(_, _ float64) []plot.Tick {
		t := []plot.Tick{{Value: zeroX, Label: "0"}, {Value: nonFinX, Label: "+Inf/NaN"}}
		for i := 0; i <= nb; i++ {
			v := lo + float64(i)*w
			if i%binsPerDecade != 0 {
				t = append(t, plot.Tick{Value: v})
				continue
			}
			l := decadeLabel(int(math.Round(v)))
			if i == 0 && clamped {
				l = "≤" + l
			}
			t = append(t, plot.Tick{Value: v, Label: l})
		}
		return t
	})
	p.Y.Tick.Marker = plot.TickerFunc(integerTicks)
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0
	grid.Horizontal.Color = color.Gray{Y: 0xe0}
	p.Add(grid)

	bars := func(bins []plotter.HistogramBin, fill color.Color) *plotter.Histogram {
		h := &plotter.Histogram{Bins: bins, Width: w, FillColor: fill}
		h.LineStyle = draw.LineStyle{Color: color.White, Width: vg.Points(0.5)}
		return h
	}
	hWithin := bars(within, colWithin)
	hOver := bars(over, colOver)
	hZero := bars(special(zeroX, u.Zero), colZero)
	hNonFin := bars(special(nonFinX, u.NonFin), colNonFin)
	p.Add(hWithin, hOver, hZero, hNonFin)

	// Thin grey lines set the 0 and +Inf/NaN bars apart from the log axis, which has neither; they
	// stop at the tallest bar, below the legend.
	for _, x := range []float64{(zeroX + 0.25 + lo) / 2, (hi + nonFinX - 0.25) / 2} {
		sep, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
		if err != nil {
			return err
		}
		sep.LineStyle = draw.LineStyle{Color: color.Gray{Y: 0xc0}, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
		p.Add(sep)
	}
	bound, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 0, Y: ymax}})
	if err != nil {
		return err
	}
	bound.LineStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
	p.Add(bound)
	lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: 0, Y: ymax}}, Labels: []string{"bound (pass ≤ 1)"}})
	if err != nil {
		return err
	}
	// Right of the line: the legend is top left, and the line may be anywhere from the middle on.
	lbl.TextStyle[0].XAlign = text.XLeft
	lbl.TextStyle[0].YAlign = text.YTop
	lbl.TextStyle[0].Font.Size = vg.Points(10)
	lbl.Offset = vg.Point{X: vg.Points(4), Y: -vg.Points(3)}
	p.Add(lbl)

	// A bar of one case among hundreds is a sliver: the bars that matter most (0, outside the
	// bound, +Inf/NaN) carry their count.
	var at plotter.XYs
	var labels []string
	mark := func(x, n float64) {
		if n > 0 {
			at = append(at, plotter.XY{X: x, Y: n})
			labels = append(labels, fmt.Sprintf("%d", int(n)))
		}
	}
	mark(zeroX, float64(u.Zero))
	for _, b := range over {
		mark((b.Min+b.Max)/2, b.Weight)
	}
	mark(nonFinX, float64(u.NonFin))
	if len(at) > 0 {
		nl, err := plotter.NewLabels(plotter.XYLabels{XYs: at, Labels: labels})
		if err != nil {
			return err
		}
		for i := range nl.TextStyle {
			nl.TextStyle[i].XAlign = text.XCenter
			nl.TextStyle[i].YAlign = text.YBottom
			nl.TextStyle[i].Font.Size = vg.Points(10)
		}
		nl.Offset = vg.Point{Y: vg.Points(2)}
		p.Add(nl)
	}

	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(6)
	p.Legend.YOffs = -vg.Points(4)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Legend.Padding = vg.Points(3)
	p.Legend.Add(fmt.Sprintf("0: every element exact (%d)", u.Zero), hZero)
	p.Legend.Add(fmt.Sprintf("within the bound, 0 < ratio ≤ 1 (%d)", u.Within), hWithin)
	p.Legend.Add(fmt.Sprintf("outside the bound, ratio > 1 (%d)", u.Over), hOver)
	p.Legend.Add(fmt.Sprintf("+Inf/NaN: fails (%d)", u.NonFin), hNonFin)

	const width, height = 7 * vg.Inch, 4 * vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(120))
	pad := vg.Points(8) // keep the title and the axis labels off the image's edges
	p.Draw(draw.Crop(draw.New(img), pad, -pad, pad, -pad))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// decadeLabel is 10^k as a tick label: 0.001 … 1000 written out, 1e-5 beyond.
func decadeLabel(k int) string {
	if k >= -3 && k <= 3 {
		return fmt.Sprintf("%g", math.Pow(10, float64(k)))
	}
	return fmt.Sprintf("1e%d", k)
}

// integerTicks labels whole numbers of cases: a step of 1, 2 or 5 times a power of ten, at most
// six steps over the axis.
func integerTicks(lo, hi float64) []plot.Tick {
	step := tickStep(hi - lo)
	var t []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		t = append(t, plot.Tick{Value: v, Label: fmt.Sprintf("%d", int(v))})
	}
	return t
}

func tickStep(span float64) float64 {
	for m := 1.0; ; m *= 10 {
		for _, s := range []float64{1, 2, 5} {
			if span/(s*m) <= 6 {
				return s * m
			}
		}
	}
}
