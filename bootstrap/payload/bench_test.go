package payload

import "testing"

// defaultSizeGuard is the most the default payload may grow to, raw, before
// TestDefaultPayloadSizeGuard and BenchmarkRender fail: about 1.7 times
// what it is (4,822 bytes), well under the platforms' limits, so that
// growth is a decision and not an accident.
const defaultSizeGuard = 8 << 10

// BenchmarkRender renders each variant and reports its sizes: raw-bytes is
// the user data as Azure customData carries it, gzip-b64-bytes as vSphere
// guestinfo carries it. It fails when the default variant's raw size passes
// 8 KiB.
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
			if name == "default" && len(p.Script) > defaultSizeGuard {
				b.Errorf("the default payload is %d bytes raw, over the %d the benchmark allows", len(p.Script), defaultSizeGuard)
			}
		})
	}
}

// TestDefaultPayloadSizeGuard holds the default payload under
// defaultSizeGuard in `make test`, not only in `make bench`.
func TestDefaultPayloadSizeGuard(t *testing.T) {
	p, err := Render(input(variants()["default"]))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Script) > defaultSizeGuard {
		t.Errorf("the default payload is %d bytes raw, over the %d allowed: raise defaultSizeGuard only on purpose", len(p.Script), defaultSizeGuard)
	}
}
