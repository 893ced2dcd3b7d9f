package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"strconv"
	"strings"
	"time"
)

// A panel is one series over time. Each has one or two lines: the p99 (or
// the value) in red, the p50 in blue.
type panel struct {
	title string
	lines [][]float64 // per line, one value per sample (NaN: none)
}

var (
	plotBG     = color.RGBA{255, 255, 255, 255}
	plotWarmup = color.RGBA{235, 235, 235, 255}
	plotAxis   = color.RGBA{90, 90, 90, 255}
	plotGrid   = color.RGBA{215, 215, 215, 255}
	plotText   = color.RGBA{20, 20, 20, 255}
	plotLines  = []color.RGBA{{200, 30, 30, 255}, {30, 80, 200, 255}}
)

// soakPanels turns the samples into the plot's panels, in the order
// plotLegend lists them.
func soakPanels(samples []soakSample) []panel {
	col := func(f func(soakSample) float64) []float64 {
		vs := make([]float64, len(samples))
		for i, s := range samples {
			vs[i] = f(s)
		}
		return vs
	}
	ps := []panel{
		{"HEAP IN USE MIB", [][]float64{col(func(s soakSample) float64 { return s.heapInuse / (1 << 20) })}},
		{"GOROUTINES", [][]float64{col(func(s soakSample) float64 { return s.goroutines })}},
		{"OPEN FILES", [][]float64{col(func(s soakSample) float64 { return s.fds })}},
	}
	db := col(func(s soakSample) float64 { return s.dbConns })
	for _, v := range db {
		if !math.IsNaN(v) {
			ps = append(ps, panel{"DB CONNECTIONS", [][]float64{db}})
			break
		}
	}
	rate := make([]float64, len(samples))
	for i, s := range samples {
		rate[i] = math.NaN()
		if i > 0 {
			n := s.ops["send"].n + s.ops["refresh"].n + s.ops["current_user"].n
			rate[i] = float64(n) / (s.t - samples[i-1].t).Seconds()
		}
	}
	ps = append(ps, panel{"OPERATIONS PER S", [][]float64{rate}})
	for _, name := range soakSeries {
		p99 := col(func(s soakSample) float64 { return opMS(s.ops[name], 99) })
		p50 := col(func(s soakSample) float64 { return opMS(s.ops[name], 50) })
		ps = append(ps, panel{strings.ToUpper(strings.ReplaceAll(name, "_", " ")) + " P99 P50 MS", [][]float64{p99, p50}})
	}
	return ps
}

func opMS(o opFigures, q int) float64 {
	if o.n == 0 {
		return math.NaN()
	}
	if q == 99 {
		return ms(o.p99)
	}
	return ms(o.p50)
}

// plotLegend describes the PNG for soak.txt.
func plotLegend(samples []soakSample) string {
	var b strings.Builder
	b.WriteString("\nsoak.png: one panel per series, left to right and top to bottom; x is time since the load began\n" +
		"(the grey band is the warm-up, not judged); red is the value or the p99 of the interval, blue the p50;\n" +
		"the figure at the top left of a panel is its y maximum (the axis starts at 0):\n")
	for _, p := range soakPanels(samples) {
		b.WriteString("  " + strings.ToLower(p.title) + "\n")
	}
	b.WriteString("soak.csv: one row per sample; columns: " + strings.Join(soakColumns(), ", ") + "\n" +
		"  (t_s seconds since the load began; per operation the count done in the interval, those failed or\n" +
		"  skipped, and latency p50/p99/max in ms; message_lag: the send's answer to the code readable in the\n" +
		"  dev outbox; webhook_lag: the event's created_at to its arrival at the receiver)\n")
	return b.String()
}

// plotSoak draws the panels: two columns, axes from 0 to each panel's
// maximum, the warm-up shaded. Text is drawn with a small built-in font.
func plotSoak(samples []soakSample, warmup time.Duration) []byte {
	ps := soakPanels(samples)
	const cols, pw, ph, pad = 2, 560, 170, 12
	rows := (len(ps) + cols - 1) / cols
	img := image.NewRGBA(image.Rect(0, 0, cols*pw, rows*ph))
	draw.Draw(img, img.Bounds(), &image.Uniform{plotBG}, image.Point{}, draw.Src)
	var tmax float64
	if len(samples) > 0 {
		tmax = samples[len(samples)-1].t.Seconds()
	}
	if tmax <= 0 {
		tmax = 1
	}
	for i, p := range ps {
		ox, oy := (i%cols)*pw, (i/cols)*ph
		// The plot area inside the panel.
		x0, x1 := ox+pad+36, ox+pw-pad
		y0, y1 := oy+pad+14, oy+ph-pad-12 // top, bottom
		ymax := 0.0
		for _, l := range p.lines {
			for _, v := range l {
				if !math.IsNaN(v) && v > ymax {
					ymax = v
				}
			}
		}
		ymax = niceMax(ymax)
		xAt := func(t float64) int { return x0 + int(math.Round(t/tmax*float64(x1-x0))) }
		yAt := func(v float64) int { return y1 - int(math.Round(v/ymax*float64(y1-y0))) }
		if w := warmup.Seconds(); w > 0 {
			fill(img, x0, y0, min(xAt(w), x1), y1, plotWarmup)
		}
		for k := 1; k < 4; k++ { // horizontal grid at quarters
			y := y1 - k*(y1-y0)/4
			hline(img, x0, x1, y, plotGrid)
		}
		step := tickStep(tmax)
		for t := step; t < tmax; t += step {
			x := xAt(t)
			vline(img, x, y0, y1, plotGrid)
			vline(img, x, y1, y1+3, plotAxis)
		}
		hline(img, x0, x1, y1, plotAxis)
		vline(img, x0, y0, y1, plotAxis)
		text(img, ox+pad, oy+pad-4, p.title, plotText)
		text(img, ox+pad, y0, short(ymax), plotText)
		text(img, ox+pad, y1-8, "0", plotText)
		text(img, x1-36, y1+5, short(tmax)+" S", plotText)
		for li, l := range p.lines {
			c := plotLines[li%len(plotLines)]
			px, py, have := 0, 0, false
			for si, v := range l {
				if math.IsNaN(v) {
					have = false
					continue
				}
				x, y := xAt(samples[si].t.Seconds()), yAt(v)
				if have {
					line(img, px, py, x, y, c)
				} else {
					fill(img, x-1, y-1, x+2, y+2, c)
				}
				px, py, have = x, y, true
			}
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // writing to memory does not fail
	return buf.Bytes()
}

// niceMax rounds a panel's maximum up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// tickStep is the time between x ticks: about ten over the run.
func tickStep(tmax float64) float64 {
	for _, s := range []float64{1, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600} {
		if tmax/s <= 12 {
			return s
		}
	}
	return 7200
}

func short(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "K"
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func fill(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	draw.Draw(img, image.Rect(x0, y0, x1, y1), &image.Uniform{c}, image.Point{}, draw.Src)
}

func hline(img *image.RGBA, x0, x1, y int, c color.RGBA) {
	for x := x0; x <= x1; x++ {
		img.SetRGBA(x, y, c)
	}
}

func vline(img *image.RGBA, x, y0, y1 int, c color.RGBA) {
	for y := y0; y <= y1; y++ {
		img.SetRGBA(x, y, c)
	}
}

// line draws from (x0, y0) to (x1, y1), two pixels thick (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		img.SetRGBA(x0, y0, c)
		img.SetRGBA(x0, y0+1, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// glyphs is a 3×5 pixel font: for each character, its five rows of three
// columns, top to bottom, '#' set; a character not here is drawn as a space.
var glyphs = map[rune]string{
	'0': "### #.# #.# #.# ###",
	'1': ".#. ##. .#. .#. ###",
	'2': "### ..# ### #.. ###",
	'3': "### ..# ### ..# ###",
	'4': "#.# #.# ### ..# ..#",
	'5': "### #.. ### ..# ###",
	'6': "### #.. ### #.# ###",
	'7': "### ..# ..# ..# ..#",
	'8': "### #.# ### #.# ###",
	'9': "### #.# ### ..# ###",
	'.': "... ... ... ... .#.",
	'-': "... ... ### ... ...",
	'+': "... .#. ### .#. ...",
	'A': ".#. #.# ### #.# #.#",
	'B': "##. #.# ##. #.# ##.",
	'C': "### #.. #.. #.. ###",
	'D': "##. #.# #.# #.# ##.",
	'E': "### #.. ### #.. ###",
	'F': "### #.. ### #.. #..",
	'G': "### #.. #.# #.# ###",
	'H': "#.# #.# ### #.# #.#",
	'I': "### .#. .#. .#. ###",
	'J': "..# ..# ..# #.# ###",
	'K': "#.# #.# ##. #.# #.#",
	'L': "#.. #.. #.. #.. ###",
	'M': "#.# ### ### #.# #.#",
	'N': "##. #.# #.# #.# #.#",
	'O': ".#. #.# #.# #.# .#.",
	'P': "### #.# ### #.. #..",
	'Q': ".#. #.# #.# ##. .##",
	'R': "##. #.# ##. #.# #.#",
	'S': "### #.. ### ..# ###",
	'T': "### .#. .#. .#. .#.",
	'U': "#.# #.# #.# #.# ###",
	'V': "#.# #.# #.# #.# .#.",
	'W': "#.# #.# ### ### #.#",
	'X': "#.# #.# .#. #.# #.#",
	'Y': "#.# #.# .#. .#. .#.",
	'Z': "### ..# .#. #.. ###",
}

// text draws s at (x, y), its top left, at twice the font's size.
func text(img *image.RGBA, x, y int, s string, c color.RGBA) {
	const scale = 2
	for _, r := range strings.ToUpper(s) {
		g := strings.ReplaceAll(glyphs[r], " ", "")
		for i, px := range g {
			if px == '#' {
				gx, gy := x+(i%3)*scale, y+(i/3)*scale
				fill(img, gx, gy, gx+scale, gy+scale, c)
			}
		}
		x += 4 * scale
	}
}
