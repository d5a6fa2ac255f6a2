package nodeconfig

import "net/url"

// RedactURL returns a URL fit for an error message, a log line or a status
// condition: without the password of its user info and without its query
// (a download URL may carry a signed token there). A value that does not
// parse as a URL is not echoed at all.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable URL>"
	}
	if u.RawQuery != "" {
		u.RawQuery = "REDACTED"
	}
	return u.Redacted()
}
