package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// NumStr prints a rate with about four significant digits and no exponent.
func NumStr(x float64) string {
	switch {
	case x >= 1000:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	case x >= 1:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.3g", x)
}

// WriteTable prints the results table (one row per result, with the judge's verdict; a failed one
// has "FAILED: " and its reason where the times would be) and the HBM line. "device ms" is the device timer's median (CUDA/HIP events, as the fp16
// baseline is timed), "host ms" the host clock's median around the call(s) and the sync; GB/s,
// % HBM and Gqk/s follow the device median.
func WriteTable(w io.Writer, rep *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "spec\ttier\treqs x q\tseq_len\tHq/Hkv\tsplits\tqg\tcalls\tMB read\tdevice ms\tdev min ms\thost ms\tstream ms\tGB/s\t% HBM\tGqk/s\tverdict\t")
	for _, r := range rep.Results {
		if r.Error != "" {
			reason := r.Error
			if !strings.HasPrefix(reason, "FAILED") {
				reason = "FAILED: " + reason
			}
			// The reason is the line's last cell, not tab-terminated: it takes no column's width.
			fmt.Fprintf(tw, "%s\t%s\t%dx%d\t%d\t%d/%d\t-\t-\t-\t%.1f\t  %s\n", r.Spec, r.Tier, r.Reqs, r.QPerReq, r.Tokens, r.QHeads, r.KVHeads, float64(r.Bytes)/1e6, reason)
			continue
		}
		frac := "-"
		if r.Fraction > 0 {
			frac = fmt.Sprintf("%.1f", 100*r.Fraction)
		}
		splits, qg := "-", "-" // a prefill has no query_group, and its splits only when asked for (auto: the tier's)
		if r.Splits > 0 {
			splits = fmt.Sprint(r.Splits)
		}
		if r.Splits > 0 && r.QueryGroup > 0 {
			qg = fmt.Sprint(r.QueryGroup)
		}
		fmt.Fprintf(tw, "%s\t%s\t%dx%d\t%d\t%d/%d\t%s\t%s\t%d\t%.1f\t%.4f\t%.4f\t%.4f\t%.4f\t%s\t%s\t%s\t%s\t\n",
			r.Spec, r.Tier, r.Reqs, r.QPerReq, r.Tokens, r.QHeads, r.KVHeads, splits, qg, r.Calls, float64(r.Bytes)/1e6,
			r.DeviceMS, r.DeviceMinMS, r.MedianMS, r.StreamMS, NumStr(r.GBps), frac, NumStr(r.GQKps), r.Verdict)
	}
	tw.Flush()
	if rep.HBM != nil {
		fmt.Fprintf(w, "HBM (octave_copy_d2d of %s, read+write): %.1f GB/s (median %.3f ms); sync floor %.4f ms; device %s\n",
			HumanBytes(rep.HBM.Bytes), rep.HBM.GBps, rep.HBM.MedianMS, rep.SyncFloorMS, rep.Device["name"])
	} else {
		fmt.Fprintf(w, "HBM: not measured; sync floor %.4f ms; device %s\n", rep.SyncFloorMS, rep.Device["name"])
	}
}
