package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// A soak passes when, after the warm-up, what a leak would grow stays flat:
// the median of the last third of the samples is within the tolerance of
// the first third's, and so is the rise of a line fitted through all of
// them (Theil–Sen). Each series also has a fixed slack, so that a small absolute
// wobble (a few goroutines, a GC cycle's worth of heap) is not a failure.
// Latency and lag are recorded, never judged.
type flatSeries struct {
	name  string
	unit  string
	slack float64
	value func(soakSample) float64
}

// The slack of each series: what a burst of requests in flight or a GC
// cycle moves it by, below any leak worth the name over a soak.
const (
	heapSlackMiB   = 8
	goroutineSlack = 20
	fdSlack        = 20
	dbConnSlack    = 4
)

var flatChecks = []flatSeries{
	{"heap in use", "MiB", heapSlackMiB, func(s soakSample) float64 { return s.heapInuse / (1 << 20) }},
	{"goroutines", "", goroutineSlack, func(s soakSample) float64 { return s.goroutines }},
	{"open files", "", fdSlack, func(s soakSample) float64 { return s.fds }},
	{"database connections", "", dbConnSlack, func(s soakSample) float64 { return s.dbConns }},
}

// flatResult is one series' verdict.
type flatResult struct {
	name, unit          string
	first, last, rise   float64 // first and last third's medians, the fitted line's rise
	limit               float64 // the growth allowed
	grewMedian, grewFit bool
}

func (r flatResult) ok() bool { return !r.grewMedian && !r.grewFit }

// checkFlat judges one series of (seconds, value) points taken after the
// warm-up; it needs at least six.
func checkFlat(name, unit string, ts, vs []float64, tolerance, slack float64) flatResult {
	n := len(vs)
	third := n / 3
	r := flatResult{name: name, unit: unit, first: median(vs[:third]), last: median(vs[n-third:])}
	r.limit = math.Abs(r.first)*tolerance + slack
	r.rise = slope(ts, vs) * (ts[n-1] - ts[0])
	r.grewMedian = r.last-r.first > r.limit
	r.grewFit = r.rise > r.limit
	return r
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// slope is the Theil–Sen estimate of vs's slope over ts: the median of the
// slopes between every two points, so that a burst of load at one end of
// the run (requests in flight, their goroutines and connections) does not
// tilt it the way it tilts a least-squares line.
func slope(ts, vs []float64) float64 {
	var ss []float64
	for i := range ts {
		for j := i + 1; j < len(ts); j++ {
			if ts[j] != ts[i] {
				ss = append(ss, (vs[j]-vs[i])/(ts[j]-ts[i]))
			}
		}
	}
	if len(ss) == 0 {
		return 0
	}
	return median(ss)
}

// soakReport is the verdict and the figures worth a line.
type soakReport struct {
	lines    []string
	failures []string
}

func (r *soakReport) failed() bool { return len(r.failures) > 0 }

func (r *soakReport) String() string {
	var b strings.Builder
	for _, l := range r.lines {
		b.WriteString(l + "\n")
	}
	if r.failed() {
		b.WriteString("FAIL:\n")
		for _, f := range r.failures {
			b.WriteString("  " + f + "\n")
		}
	} else {
		b.WriteString("PASS: heap, goroutines and connections flat; no operation failed beyond the allowance\n")
	}
	return b.String()
}

// judge checks the samples after the warm-up, and the counts once the load
// stopped (quiet) against those before it (samples[0]).
func judge(samples []soakSample, quiet soakSample, cfg soakConfig, stats *soakStats) *soakReport {
	r := &soakReport{}
	add := func(format string, a ...any) { r.lines = append(r.lines, fmt.Sprintf(format, a...)) }
	fail := func(format string, a ...any) { r.failures = append(r.failures, fmt.Sprintf(format, a...)) }

	var post []soakSample
	for _, s := range samples {
		if s.t >= cfg.warmup && s.t > 0 {
			post = append(post, s)
		}
	}
	add("soak: %s at %.0f operations/s (%s), %d samples, %d after the %s warm-up; tolerance %.0f %% plus a slack per series",
		cfg.dur, cfg.rate, cfg.mix, len(samples), len(post), cfg.warmup, cfg.tolerance*100)
	if len(post) < 6 {
		fail("only %d samples after the warm-up: run longer, or sample more often (-interval), to judge growth (6 needed)", len(post))
	} else {
		ts := make([]float64, len(post))
		for i, s := range post {
			ts[i] = s.t.Seconds()
		}
		for _, c := range flatChecks {
			vs := make([]float64, len(post))
			for i, s := range post {
				vs[i] = c.value(s)
			}
			if slices.ContainsFunc(vs, math.IsNaN) {
				continue // not measured (connections on SQLite)
			}
			res := checkFlat(c.name, c.unit, ts, vs, cfg.tolerance, c.slack)
			verdict := "flat"
			if !res.ok() {
				verdict = "GREW"
			}
			add("  %-21s first third %8.1f%s  last third %8.1f%s  fitted rise %+8.1f%s  (allowed +%.1f%s)  %s",
				res.name, res.first, res.unit, res.last, res.unit, res.rise, res.unit, res.limit, res.unit, verdict)
			if res.grewMedian {
				fail("%s grew: the last third's median is %.1f%s against %.1f%s in the first third (allowed +%.1f%s)",
					res.name, res.last, res.unit, res.first, res.unit, res.limit, res.unit)
			} else if res.grewFit {
				fail("%s grew: the fitted line rises %.1f%s over the run (allowed %.1f%s)",
					res.name, res.rise, res.unit, res.limit, res.unit)
			}
		}
	}

	before := samples[0]
	add("  after the load (quiet %s): goroutines %.0f (before the load %.0f), open files %.0f (before %.0f), heap in use %.1f MiB (before %.1f)",
		quiet.t.Round(time.Second), quiet.goroutines, before.goroutines, quiet.fds, before.fds, quiet.heapInuse/(1<<20), before.heapInuse/(1<<20))
	if quiet.goroutines > before.goroutines+goroutineSlack {
		fail("goroutines left after the load: %.0f, %.0f before it (allowed +%d)", quiet.goroutines, before.goroutines, goroutineSlack)
	}
	if quiet.fds > before.fds+fdSlack {
		fail("open files left after the load: %.0f, %.0f before it (allowed +%d)", quiet.fds, before.fds, fdSlack)
	}

	// What was done, and how long it took: recorded, never judged.
	missed := 0.0
	for _, s := range samples {
		missed += s.missed
	}
	if missed > 0 {
		fail("%.0f operations were due but not started: %d were in flight, the server did not keep up with -rate", missed, maxInFlight)
	}
	for _, name := range soakSeries {
		n, bad := 0, 0
		var p99s, p50s []float64
		for _, s := range post {
			o := s.ops[name]
			if o.n > 0 {
				p50s = append(p50s, ms(o.p50))
				p99s = append(p99s, ms(o.p99))
			}
		}
		for _, s := range samples {
			n += s.ops[name].n
			bad += s.ops[name].errs + s.ops[name].skipped
		}
		if n+bad == 0 {
			if name == "webhook_lag" && cfg.webhooks {
				fail("no webhook delivery arrived at the receiver")
			}
			continue
		}
		line := fmt.Sprintf("  %-13s %7d done %5d failed or skipped", name, n, bad)
		if len(p99s) > 0 {
			third := max(len(p99s)/3, 1)
			line += fmt.Sprintf("  p50 %7.1f ms  p99 per interval: median %7.1f ms, max %7.1f ms, first third %7.1f, last third %7.1f",
				median(p50s), median(p99s), slices.Max(p99s), median(p99s[:third]), median(p99s[len(p99s)-third:]))
		}
		add("%s", line)
		if share := float64(bad) / float64(n+bad); share > cfg.maxErrors {
			first := stats.firstError(name)
			fail("%s: %d of %d failed or were skipped (%.1f %%, allowed %.1f %%); first error: %s",
				name, bad, n+bad, share*100, cfg.maxErrors*100, first)
		}
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s *soakStats) firstError(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.firstErr[name]; ok {
		return e
	}
	return "none (skipped: no free session; see in_flight)"
}
