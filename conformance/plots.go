package conformance

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/octant-kv/octant/harness"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// errorPlots writes one PNG per op/tier: the histogram of each case's worst |error|/bound (the
// declared profile's bound; 1 is the limit), and returns their file names by op/tier.
func (c *Certificate) errorPlots(dir string) (map[string]string, error) {
	per := map[string]plotter.Values{}
	for _, r := range c.Cases {
		el := strings.SplitN(r.Path, "/", 3)
		if len(el) < 3 || el[0] == "isa" || r.Status == harness.NotSupported || math.IsNaN(r.BoundErr) || math.IsInf(r.BoundErr, 0) {
			continue
		}
		k := el[0] + "/" + el[1]
		per[k] = append(per[k], r.BoundErr)
	}
	keys := make([]string, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := map[string]string{}
	for _, k := range keys {
		v := per[k]
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s on %s: worst |error| / bound per case (%d cases)", k, c.Arch, len(v))
		p.X.Label.Text = "|error| / declared profile bound (≤ 1 passes)"
		p.Y.Label.Text = "cases"
		h, err := plotter.NewHist(v, 20)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", k, err)
		}
		p.Add(h)
		name := "errors-" + strings.ReplaceAll(k, "/", "-") + ".png"
		if err := p.Save(6*vg.Inch, 3.5*vg.Inch, filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("plot %s: %w", k, err)
		}
		out[k] = name
	}
	return out, nil
}
