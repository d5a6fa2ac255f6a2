package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// File is a file to write on the node.
type File struct {
	Path string
	Data []byte
	// Private files (credentials) are readable by SYSTEM and Administrators
	// only.
	Private bool
}

// marshalJSON renders v indented, without HTML escaping (the files are read
// by programs, not browsers, and "<" should stay readable), ending in a
// newline.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// tomlString quotes s as a TOML basic string. TOML documents are UTF-8, so
// a string that is not refuses to render rather than produce a file
// containerd cannot read.
func tomlString(s string) (string, error) {
	if !utf8.ValidString(s) {
		// The value is not echoed: it may be a URL with credentials.
		return "", errors.New("a value is not valid UTF-8")
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			// TOML forbids the other control characters in basic strings.
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

// checkUTF8 refuses values that are not valid UTF-8: the JSON, YAML and TOML
// encoders would otherwise replace their bytes silently, and the file would
// say something other than the configuration. (A configuration decoded from
// JSON never has such values; this guards callers that build one in Go.)
func checkUTF8(what string, values ...string) error {
	for _, v := range values {
		if !utf8.ValidString(v) {
			return fmt.Errorf("%s: a value is not valid UTF-8", what)
		}
	}
	return nil
}
