package userdata

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"testing"
)

func TestGzipBase64RoundTrip(t *testing.T) {
	in := bytes.Repeat([]byte("#ps1_sysnative\n$NodeConfig = 'x'\n"), 50)
	enc, err := GzipBase64(in)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("round trip: %v", err)
	}
	if len(enc) >= len(in) {
		t.Errorf("%d bytes encoded from %d: not compressed", len(enc), len(in))
	}
}
