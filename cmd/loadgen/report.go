package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// row is one line of the summary table.
type row struct {
	scenario, metric, value, target, verdict string
}

// report collects the summary table.
type report struct {
	rows []row
}

func (r *report) add(scenario, metric, value, target, verdict string) {
	r.rows = append(r.rows, row{scenario, metric, value, target, verdict})
}

// addDur adds a latency; a non-zero target is an upper bound.
func (r *report) addDur(scenario, metric string, d, target time.Duration) {
	if target == 0 {
		r.add(scenario, metric, ms(d), "", "")
		return
	}
	r.add(scenario, metric, ms(d), "<= "+ms(target), verdict(d <= target))
}

// addRate adds a throughput; a non-zero target is a lower bound.
func (r *report) addRate(scenario, metric string, v, target float64) {
	if target == 0 {
		r.add(scenario, metric, fmt.Sprintf("%.0f", v), "", "")
		return
	}
	r.add(scenario, metric, fmt.Sprintf("%.0f", v), fmt.Sprintf(">= %.0f", target), verdict(v >= target))
}

// addMiB adds a memory figure; a non-zero target is an upper bound.
func (r *report) addMiB(scenario, metric string, v, target float64) {
	if target == 0 {
		r.add(scenario, metric, fmt.Sprintf("%.1f", v), "", "")
		return
	}
	r.add(scenario, metric, fmt.Sprintf("%.1f", v), fmt.Sprintf("<= %.0f", target), verdict(v <= target))
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func (r *report) print(w io.Writer, m machine) {
	fmt.Fprintln(w, "\n== summary")
	m.print(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tmetric\tvalue\ttarget\tresult")
	fmt.Fprintln(tw, "--------\t------\t-----\t------\t------")
	for _, x := range r.rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", x.scenario, x.metric, x.value, x.target, x.verdict)
	}
	tw.Flush()
}
