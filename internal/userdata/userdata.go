// Package userdata is the gzip+base64 encoding of VM user data, written
// once for the bootstrap provider (which reports sizes with it) and the
// vSphere platform (which writes guestinfo with it), so that the two agree
// byte for byte without either importing the other.
package userdata

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
)

// GzipBase64 is data gzipped at the best compression and base64-encoded:
// guestinfo.userdata.encoding = gzip+base64.
func GzipBase64(data []byte) (string, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return "", err
	}
	if _, err := zw.Write(data); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// DecodeGzipBase64 is GzipBase64's inverse, as a guest's cloud-init or
// cloudbase-init reads the value.
func DecodeGzipBase64(s string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}
