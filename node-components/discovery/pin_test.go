package discovery

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"strings"
	"testing"
)

// The hashes of testdata/ca.crt and testdata/other-ca.crt, computed with
// openssl as the kubeadm docs do:
//
//	openssl x509 -in ca.crt -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -hex
const (
	caHash      = "sha256:7eba8b598e2a9349976285abff86ed4e2ac4d5788999bb807981aa2c663d4cc8"
	otherCAHash = "sha256:8bb081423adf10c3ea012593b29b9eae7e9ae6e16be4cd6289e5a12f2966a948"
)

func readCert(t *testing.T, name string) ([]byte, *x509.Certificate) {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("testdata/%s holds no PEM block", name)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return data, c
}

func TestCACertHash(t *testing.T) {
	for name, want := range map[string]string{"ca.crt": caHash, "other-ca.crt": otherCAHash} {
		_, c := readCert(t, name)
		if got := CACertHash(c); got != want {
			t.Errorf("CACertHash(%s) = %s, want %s", name, got, want)
		}
	}
}

func TestParsePins(t *testing.T) {
	tests := []struct {
		name    string
		hashes  []string
		want    string
		wantErr string
	}{
		{name: "one", hashes: []string{caHash}, want: caHash},
		{name: "upper case is kubeadm's too", hashes: []string{"SHA256:" + strings.ToUpper(caHash[7:])}, want: caHash},
		{name: "two, sorted", hashes: []string{otherCAHash, caHash}, want: caHash + ", " + otherCAHash},
		{name: "none", wantErr: "no caCertHashes"},
		{name: "no format", hashes: []string{caHash[7:]}, wantErr: "not of the form sha256:<64 hex digits>"},
		{name: "other format", hashes: []string{"md5:" + caHash[7:]}, wantErr: "not of the form"},
		{name: "short", hashes: []string{caHash[:70]}, wantErr: "not of the form"},
		{name: "long", hashes: []string{caHash + "00"}, wantErr: "not of the form"},
		{name: "not hex", hashes: []string{caHash[:70] + "zz"}, wantErr: "not of the form"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parsePins(tt.hashes)
			if tt.wantErr != "" {
				if ReasonOf(err) != ReasonInvalidJoin || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parsePins(%q) = %v, want an InvalidJoin error containing %q", tt.hashes, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.String(); got != tt.want {
				t.Errorf("pins = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPinned(t *testing.T) {
	caPEM, _ := readCert(t, "ca.crt")
	otherPEM, _ := readCert(t, "other-ca.crt")
	bundle := append(append([]byte{}, otherPEM...), caPEM...)

	t.Run("keeps only the pinned CAs of a bundle", func(t *testing.T) {
		p, _ := parsePins([]string{caHash})
		got, err := p.pinned(bundle)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(caPEM)) {
			t.Errorf("pinned =\n%s\nwant ca.crt only:\n%s", got, caPEM)
		}
	})
	t.Run("all pinned", func(t *testing.T) {
		p, _ := parsePins([]string{caHash, otherCAHash})
		got, err := p.pinned(bundle)
		if err != nil {
			t.Fatal(err)
		}
		if certs, _ := parseCerts(got); len(certs) != 2 {
			t.Errorf("pinned holds %d certificates, want 2", len(certs))
		}
	})
	t.Run("mismatch names both hashes", func(t *testing.T) {
		p, _ := parsePins([]string{otherCAHash})
		_, err := p.pinned(caPEM)
		if ReasonOf(err) != ReasonCAMismatch {
			t.Fatalf("pinned = %v, want a CAMismatch", err)
		}
		for _, want := range []string{caHash, otherCAHash} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q does not name %s", err, want)
			}
		}
	})
	t.Run("no certificate", func(t *testing.T) {
		p, _ := parsePins([]string{caHash})
		_, err := p.pinned([]byte("not PEM"))
		if ReasonOf(err) != ReasonBadClusterInfo {
			t.Fatalf("pinned = %v, want BadClusterInfo", err)
		}
	})
}
