package userdata

import (
	"bytes"
	"testing"
)

func TestGzipBase64RoundTrip(t *testing.T) {
	in := bytes.Repeat([]byte("#ps1_sysnative\n$NodeConfig = 'x'\n"), 50)
	enc, err := GzipBase64(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeGzipBase64(enc)
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("round trip: %v", err)
	}
	if len(enc) >= len(in) {
		t.Errorf("%d bytes encoded from %d: not compressed", len(enc), len(in))
	}
	if _, err := DecodeGzipBase64("not base64!"); err == nil {
		t.Error("garbage decoded")
	}
}
