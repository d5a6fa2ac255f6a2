package discovery

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
)

// CACertHash is the pin of a CA certificate in kubeadm's format: sha256:
// and the lower-case hex SHA-256 of its DER SubjectPublicKeyInfo. It pins
// the key, so a CA re-issued with the same key keeps its hash.
func CACertHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// pins is a set of canonical (lower-case) CA hashes.
type pins map[string]bool

// parsePins reads caCertHashes. Like kubeadm it accepts the format name
// and the hex in either case.
func parsePins(hashes []string) (pins, error) {
	if len(hashes) == 0 {
		return nil, newError(ReasonInvalidJoin, nil,
			"the join configuration has no caCertHashes: the node would trust any API server that knows the token; add the cluster CA's hash (sha256:<hex>)")
	}
	p := pins{}
	for _, h := range hashes {
		format, value, ok := strings.Cut(h, ":")
		if !ok || !strings.EqualFold(format, "sha256") {
			return nil, newError(ReasonInvalidJoin, nil, "CA hash %q is not of the form sha256:<64 hex digits>", h)
		}
		raw, err := hex.DecodeString(value)
		if err != nil || len(raw) != sha256.Size {
			return nil, newError(ReasonInvalidJoin, nil, "CA hash %q is not of the form sha256:<64 hex digits>", h)
		}
		p["sha256:"+hex.EncodeToString(raw)] = true
	}
	return p, nil
}

func (p pins) String() string {
	s := make([]string, 0, len(p))
	for h := range p {
		s = append(s, h)
	}
	// Sorted, so a message is the same every time.
	slices.Sort(s)
	return strings.Join(s, ", ")
}

// pinned returns the PEM of the certificates of bundle whose key is pinned,
// in bundle order. None pinned is ReasonCAMismatch, naming the hashes the
// bundle has and the ones expected.
func (p pins) pinned(bundle []byte) ([]byte, error) {
	certs, err := parseCerts(bundle)
	if err != nil {
		return nil, newError(ReasonBadClusterInfo, err, "the CA data in the kubeconfig of kube-public/cluster-info does not parse")
	}
	var out bytes.Buffer
	var actual []string
	for _, c := range certs {
		h := CACertHash(c)
		if !p[h] {
			actual = append(actual, fmt.Sprintf("%s (%s)", h, c.Subject))
			continue
		}
		if err := pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}); err != nil {
			return nil, err
		}
	}
	if out.Len() == 0 {
		return nil, newError(ReasonCAMismatch, nil,
			"the cluster CA served in kube-public/cluster-info has public key hash %s, but the node configuration pins %s: the caCertHashes belong to another cluster, or the endpoint is not this cluster's API server",
			strings.Join(actual, ", "), p)
	}
	return out.Bytes(), nil
}

// parseCerts reads every CERTIFICATE block of a PEM bundle; there must be
// at least one.
func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("no PEM certificate found")
	}
	return certs, nil
}
