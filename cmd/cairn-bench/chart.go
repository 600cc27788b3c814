package main

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// fleetChart draws the fleet figures as an SVG line chart: agents on x,
// server memory per agent (left axis) and the fan-out's time (right axis)
// on y, each point labelled with its value.
func fleetChart(points []fleetPoint) []byte {
	const (
		w, h                     = 720, 400
		left, right, top, bottom = 70, 70, 50, 60
	)
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	maxX := float64(points[len(points)-1].agents)
	var maxMem, maxFan float64
	for _, p := range points {
		maxMem = math.Max(maxMem, p.kibPerAgent)
		maxFan = math.Max(maxFan, p.fanout.Seconds())
	}
	memTop, memStep := niceScale(maxMem)
	fanTop, fanStep := niceScale(maxFan)
	x := func(a int) float64 { return left + float64(a)/maxX*pw }
	yMem := func(v float64) float64 { return top + ph - v/memTop*ph }
	yFan := func(v float64) float64 { return top + ph - v/fanTop*ph }

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">cairnd with real agents connected: memory per agent and fan-out time</text>`+"\n", left)
	// Grid and left axis (memory).
	for v := 0.0; v <= memTop+memStep/2; v += memStep {
		y := yMem(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, y, w-right, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#1f77b4">%s</text>`+"\n", left-6, y+4, trimFloat(v))
	}
	for v := 0.0; v <= fanTop+fanStep/2; v += fanStep {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="#d62728">%s</text>`+"\n", w-right+6, yFan(v)+4, trimFloat(v))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, top+int(ph), w-right, top+int(ph))
	for _, p := range points {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(p.agents), top+int(ph)+18, strconv.Itoa(p.agents))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">agents connected (WebSocket)</text>`+"\n", left+pw/2, h-16)
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle" fill="#1f77b4">server memory per agent (KiB)</text>`+"\n", top+ph/2)
	fmt.Fprintf(&b, `<text transform="translate(%d %.1f) rotate(90)" text-anchor="middle" fill="#d62728">fan-out of one job to every agent (s)</text>`+"\n", w-18, top+ph/2)
	series := func(color string, y func(fleetPoint) float64, label func(fleetPoint) string) {
		var path bytes.Buffer
		for i, p := range points {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, x(p.agents), y(p))
		}
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", bytes.TrimSpace(path.Bytes()), color)
		for _, p := range points {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s</title></circle>`+"\n", x(p.agents), y(p), color, label(p))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="%s">%s</text>`+"\n", x(p.agents), y(p)-9, color, label(p))
		}
	}
	series("#1f77b4", func(p fleetPoint) float64 { return yMem(p.kibPerAgent) },
		func(p fleetPoint) string { return trimFloat(math.Round(p.kibPerAgent*10)/10) + " KiB" })
	series("#d62728", func(p fleetPoint) float64 { return yFan(p.fanout.Seconds()) },
		func(p fleetPoint) string { return trimFloat(math.Round(p.fanout.Seconds()*100)/100) + " s" })
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// niceScale returns an axis top at or above v and a step of 1, 2 or 5
// times a power of ten, about five steps to the top.
func niceScale(v float64) (top, step float64) {
	if v <= 0 {
		return 1, 0.2
	}
	raw := v / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch n := raw / mag; {
	case n <= 1:
		step = mag
	case n <= 2:
		step = 2 * mag
	case n <= 5:
		step = 5 * mag
	default:
		step = 10 * mag
	}
	return math.Ceil(v/step) * step, step
}

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
