package main

import (
	"errors"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// The phases of a Machine, in the order a scale-up passes through them.
var phases = []string{"Pending", "Provisioning", "Provisioned", "Running"}

// scaleChart draws how many Machines were in each phase, and Ready, over
// the scale-up.
func scaleChart(samples []phaseSample, path string) error {
	if len(samples) == 0 {
		return errors.New("no samples")
	}
	p := plot.New()
	p.Title.Text = "Windows Machines by phase during the scale-up"
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "machines"
	var lines []any
	for _, phase := range phases {
		lines = append(lines, phase, series(samples, func(s phaseSample) float64 { return float64(s.Phases[phase]) }))
	}
	lines = append(lines, "Running and Ready", series(samples, func(s phaseSample) float64 { return float64(s.Ready) }))
	if err := plotutil.AddLines(p, lines...); err != nil {
		return err
	}
	p.Legend.Top, p.Legend.Left = true, true
	return p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}

func series(samples []phaseSample, y func(phaseSample) float64) plotter.XYs {
	xys := make(plotter.XYs, len(samples))
	for i, s := range samples {
		xys[i] = plotter.XY{X: s.Seconds, Y: y(s)}
	}
	return xys
}

// roundTripsChart draws vCenter round trips per machine by method, one bar
// group per phase (provision, resync).
func roundTripsChart(trips map[string]map[string]float64, path string) error {
	methods := map[string]bool{}
	for _, byMethod := range trips {
		for m := range byMethod {
			methods[m] = true
		}
	}
	names := sortedKeys(methods)
	if len(names) == 0 {
		return errors.New("no round trips")
	}
	p := plot.New()
	p.Title.Text = "vCenter round trips per machine, by method"
	p.Y.Label.Text = "round trips per machine"
	width := vg.Points(14)
	for i, phase := range sortedKeys(trips) {
		values := make(plotter.Values, len(names))
		for j, m := range names {
			values[j] = trips[phase][m]
		}
		bars, err := plotter.NewBarChart(values, width)
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(i)
		bars.Offset = width * vg.Length(i)
		p.Add(bars)
		p.Legend.Add(phase, bars)
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.6
	p.X.Tick.Label.XAlign = -1
	p.Legend.Top = true
	return p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}

// memoryChart draws the manager's resident memory over the benchmark, with
// the goal as a line.
func memoryChart(m memoryRun, path string) error {
	if len(m.Samples) == 0 {
		return errors.New("no memory samples")
	}
	p := plot.New()
	p.Title.Text = "capwin-manager resident memory"
	p.X.Label.Text = "seconds since start"
	p.Y.Label.Text = "MiB"
	xys := make(plotter.XYs, len(m.Samples))
	for i, s := range m.Samples {
		xys[i] = plotter.XY{X: s.Seconds, Y: s.RSSMiB}
	}
	goal := plotter.XYs{{X: 0, Y: m.GoalMiB}, {X: m.Samples[len(m.Samples)-1].Seconds, Y: m.GoalMiB}}
	rss, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	g, err := plotter.NewLine(goal)
	if err != nil {
		return err
	}
	g.Color = color.RGBA{R: 200, A: 255}
	g.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(rss, g)
	p.Legend.Add("RSS", rss)
	p.Legend.Add("goal", g)
	p.Legend.Top = true
	p.Y.Min = 0
	return p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}
