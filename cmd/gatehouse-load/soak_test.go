package main

import (
	"bytes"
	"image/png"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// series makes n samples every 10 s whose value is f(i) plus noise.
func series(n int, f func(i int) float64, noise float64, seed uint64) (ts, vs []float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range n {
		ts = append(ts, float64(i*10))
		vs = append(vs, f(i)+noise*(rng.Float64()*2-1))
	}
	return ts, vs
}

func TestCheckFlat(t *testing.T) {
	cases := []struct {
		name  string
		f     func(i int) float64
		noise float64
		grew  bool
	}{
		{"flat with noise", func(int) float64 { return 100 }, 15, false},
		{"sawtooth (a cache filled and emptied)", func(i int) float64 { return 100 + float64(i%12)*3 }, 2, false},
		{"flat with a burst at the end", func(i int) float64 {
			if i >= 55 {
				return 220
			}
			return 100
		}, 5, false},
		{"steady leak", func(i int) float64 { return 100 + 2*float64(i) }, 5, true},
		{"slow leak, within the medians' allowance, caught by the fit", func(i int) float64 { return 100 + float64(i) }, 10, true},
		{"step up in the middle that stays", func(i int) float64 {
			if i >= 30 {
				return 180
			}
			return 100
		}, 5, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for seed := range uint64(20) {
				ts, vs := series(60, c.f, c.noise, seed)
				r := checkFlat("x", "", ts, vs, 0.25, 20)
				if strings.Contains(c.name, "caught by the fit") && (r.grewMedian || !r.grewFit) {
					t.Fatalf("seed %d: grewMedian %v, grewFit %v: want the fit alone to catch it", seed, r.grewMedian, r.grewFit)
				}
				if r.ok() == c.grew {
					t.Fatalf("seed %d: ok = %v (first %.1f, last %.1f, rise %.1f, limit %.1f), want grew = %v",
						seed, r.ok(), r.first, r.last, r.rise, r.limit, c.grew)
				}
			}
		})
	}
}

func TestSlopeIgnoresOutliers(t *testing.T) {
	ts, vs := series(30, func(i int) float64 { return 2 * float64(i*10) }, 0, 1)
	vs[29], vs[28] = 10000, 9000 // a burst at the end
	if s := slope(ts, vs); math.Abs(s-2) > 0.01 {
		t.Errorf("slope = %v, want 2", s)
	}
	if s := slope([]float64{5, 5}, []float64{1, 2}); s != 0 {
		t.Errorf("slope of one instant = %v, want 0", s)
	}
}

func TestParseMix(t *testing.T) {
	cycle, err := parseMix("login=2,refresh=3,current_user=5")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, op := range cycle {
		count[op]++
	}
	if len(cycle) != 10 || count["login"] != 2 || count["refresh"] != 3 || count["current_user"] != 5 {
		t.Fatalf("cycle = %v", cycle)
	}
	// Spread out: no operation twice in a row when its share is at most half.
	for i := 1; i < len(cycle); i++ {
		if cycle[i] == cycle[i-1] && cycle[i] != "current_user" {
			t.Errorf("cycle %v repeats %s", cycle, cycle[i])
		}
	}
	for _, bad := range []string{"", "login", "login=x", "jwks=1", "login=0", "login=-1"} {
		if _, err := parseMix(bad); err == nil {
			t.Errorf("parseMix(%q) = nil error", bad)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	m := parseMetrics(`# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 63
go_memstats_heap_inuse_bytes 1.7301504e+07
gatehouse_http_requests_total{method="GET",route="/metrics",status="200"} 4
process_open_fds 22
`)
	if m["go_goroutines"] != 63 || m["go_memstats_heap_inuse_bytes"] != 17301504 || m["process_open_fds"] != 22 {
		t.Errorf("parseMetrics = %v", m)
	}
	if _, ok := m["gatehouse_http_requests_total"]; ok {
		t.Error("a labelled sample was read as an unlabelled one")
	}
}

// soakRun makes samples of a run of n intervals: heap and goroutines from
// the functions, every operation done without error.
func soakRun(n int, heapMiB, goroutines func(i int) float64) []soakSample {
	var ss []soakSample
	for i := range n {
		s := soakSample{t: time.Duration(i) * 10 * time.Second, heapInuse: heapMiB(i) * (1 << 20), goroutines: goroutines(i),
			fds: 30, dbConns: math.NaN(), ops: map[string]opFigures{}}
		if i > 0 {
			for _, name := range soakSeries {
				s.ops[name] = figures([]time.Duration{time.Millisecond, 3 * time.Millisecond}, 0, 0)
			}
		}
		ss = append(ss, s)
	}
	return ss
}

func TestJudge(t *testing.T) {
	cfg := soakConfig{dur: 10 * time.Minute, rate: 40, mix: "login=1", warmup: time.Minute, tolerance: 0.25, maxErrors: 0.01, webhooks: true}
	flat := func(v float64) func(int) float64 { return func(int) float64 { return v } }
	quiet := soakSample{goroutines: 60, fds: 30}

	r := judge(soakRun(60, flat(20), flat(60)), quiet, cfg, newSoakStats())
	if r.failed() {
		t.Fatalf("a flat run failed:\n%s", r)
	}

	r = judge(soakRun(60, func(i int) float64 { return 20 + float64(i)/2 }, flat(60)), quiet, cfg, newSoakStats())
	if !r.failed() || !strings.Contains(r.String(), "heap in use grew") {
		t.Fatalf("a run whose heap doubled passed:\n%s", r)
	}

	r = judge(soakRun(60, flat(20), flat(60)), soakSample{goroutines: 200, fds: 30}, cfg, newSoakStats())
	if !r.failed() || !strings.Contains(r.String(), "goroutines left after the load") {
		t.Fatalf("goroutines left after the load passed:\n%s", r)
	}

	ss := soakRun(60, flat(20), flat(60))
	ss[30].ops["verify"] = figures(nil, 5, 0)
	stats := newSoakStats()
	stats.add("verify", 0, errFake)
	r = judge(ss, quiet, cfg, stats)
	if !r.failed() || !strings.Contains(r.String(), "verify: 5 of 121 failed") || !strings.Contains(r.String(), errFake.Error()) {
		t.Fatalf("failed verifies passed:\n%s", r)
	}

	ss = soakRun(60, flat(20), flat(60))
	ss[10].missed = 3
	if r = judge(ss, quiet, cfg, newSoakStats()); !r.failed() || !strings.Contains(r.String(), "did not keep up") {
		t.Fatalf("missed operations passed:\n%s", r)
	}

	if r = judge(soakRun(4, flat(20), flat(60)), quiet, cfg, newSoakStats()); !r.failed() || !strings.Contains(r.String(), "6 needed") {
		t.Fatalf("a run too short to judge passed:\n%s", r)
	}
}

var errFake = fakeError("POST /v1/auth/x/otps/verify: 401 {}")

type fakeError string

func (e fakeError) Error() string { return string(e) }

func TestFigures(t *testing.T) {
	var lat []time.Duration
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	f := figures(lat, 2, 1)
	if f.n != 100 || f.p50 != 50*time.Millisecond || f.p99 != 99*time.Millisecond || f.max != 100*time.Millisecond || f.errs != 2 || f.skipped != 1 {
		t.Errorf("figures = %+v", f)
	}
	if !slices.IsSorted(lat) {
		t.Error("figures left the latencies unsorted (it sorts in place)")
	}
	row := soakSample{t: 10 * time.Second, heapInuse: 3 << 20, goroutines: 7, fds: 9, dbConns: math.NaN(),
		ops: map[string]opFigures{"send": f}}.record()
	if len(row) != len(soakColumns()) {
		t.Fatalf("a row has %d columns, the header %d", len(row), len(soakColumns()))
	}
	if got := strings.Join(row[:12], ","); got != "10,3.00,7,9,,0,0,100,3,50.000,99.000,100.000" {
		t.Errorf("row = %s", got)
	}
}

func TestPlotSoak(t *testing.T) {
	ss := soakRun(30, func(i int) float64 { return 20 + float64(i%5) }, func(int) float64 { return 60 })
	ss[5].ops["verify"] = opFigures{} // an interval without verifies: a gap, not a zero
	raw := plotSoak(ss, time.Minute)
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	panels := len(soakPanels(ss))
	if panels != 4+len(soakSeries) { // heap, goroutines, files, operations/s (no database connections on SQLite)
		t.Errorf("%d panels", panels)
	}
	if b := img.Bounds(); b.Dx() != 1120 || b.Dy() != (panels+1)/2*170 {
		t.Errorf("image is %v", b)
	}
	// The lines are drawn: the p99 red is there.
	red := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if r>>8 == 200 && g>>8 == 30 && b>>8 == 30 {
				red++
			}
		}
	}
	if red < 1000 {
		t.Errorf("only %d red pixels: are the lines drawn?", red)
	}
	legend := plotLegend(ss)
	for _, want := range []string{"heap in use mib", "webhook lag p99 p50 ms", "t_s, heap_inuse_mib"} {
		if !strings.Contains(legend, want) {
			t.Errorf("legend lacks %q:\n%s", want, legend)
		}
	}
}

func TestGlyphs(t *testing.T) {
	for r, g := range glyphs {
		rows := strings.Split(g, " ")
		if len(rows) != 5 || strings.Trim(g, "#. ") != "" {
			t.Errorf("glyph %q = %q: want five rows of '#' and '.'", r, g)
		}
		for _, row := range rows {
			if len(row) != 3 {
				t.Errorf("glyph %q = %q: want three columns", r, g)
			}
		}
	}
	for _, title := range soakPanels(soakRun(2, func(int) float64 { return 1 }, func(int) float64 { return 1 })) {
		for _, r := range title.title {
			if _, ok := glyphs[r]; !ok && r != ' ' {
				t.Errorf("title %q: no glyph for %q", title.title, r)
			}
		}
	}
}
