// Package userdata is the gzip+base64 encoding of VM user data, written
// once for the bootstrap provider (which reports sizes with it) and the
// vSphere platform (which writes guestinfo with it), so that the two agree
// byte for byte without either importing the other.
package userdata

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
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
