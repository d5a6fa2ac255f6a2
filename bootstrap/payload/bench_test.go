package payload

import "testing"

// BenchmarkRender renders each variant and reports its sizes: raw-bytes is
// the user data as Azure customData carries it, gzip-b64-bytes as vSphere
// guestinfo carries it.
func BenchmarkRender(b *testing.B) {
	for _, name := range variantNames() {
		in := input(variants()[name])
		b.Run(name, func(b *testing.B) {
			var p *Payload
			var err error
			for b.Loop() {
				p, err = Render(in)
				if err != nil {
					b.Fatal(err)
				}
			}
			enc, err := p.GzipBase64()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(p.Script)), "raw-bytes")
			b.ReportMetric(float64(len(enc)), "gzip-b64-bytes")
			b.ReportMetric(float64(len(p.JSON)), "json-bytes")
		})
	}
}
