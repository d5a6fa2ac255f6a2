package host

import "strings"

// CommandLine renders argv as one Windows command line that
// CommandLineToArgvW (and the C runtime every Go, C and C++ program on
// Windows parses its arguments with) splits back into exactly argv. The
// service manager stores a service's command line as one string: this is the
// only way values reach it, so no value from a node configuration can add or
// split an argument.
func CommandLine(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if i == 0 {
			parts[i] = quoteProgram(a)
			continue
		}
		parts[i] = EscapeArg(a)
	}
	return strings.Join(parts, " ")
}

// quoteProgram quotes the program name, which CommandLineToArgvW reads by a
// simpler rule: up to the next space, or between quotes with no escapes.
func quoteProgram(p string) string {
	if p != "" && !strings.ContainsAny(p, " \t\"") {
		return p
	}
	return `"` + p + `"`
}

// EscapeArg quotes one argument by the C runtime's rules: backslashes are
// literal except before a quote, where 2n backslashes and a quote stand for
// n backslashes and a literal quote.
func EscapeArg(s string) string {
	if s == "" {
		return `""`
	}
	if !strings.ContainsAny(s, " \t\n\v\"") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			slashes++
		case '"':
			b.WriteString(strings.Repeat(`\`, slashes+1))
			slashes = 0
		default:
			slashes = 0
		}
		b.WriteByte(c)
	}
	// Backslashes before the closing quote are doubled so it stays a quote.
	b.WriteString(strings.Repeat(`\`, slashes))
	b.WriteByte('"')
	return b.String()
}

// SplitCommandLine is CommandLineToArgvW's parse, for tests and for reading
// a registered service's command line back into argv.
func SplitCommandLine(cmd string) []string {
	var argv []string
	i := 0
	// The program name: up to whitespace, or a quoted run with no escapes.
	var prog strings.Builder
	inQuote := false
	for ; i < len(cmd); i++ {
		c := cmd[i]
		if c == '"' {
			inQuote = !inQuote
			continue
		}
		if !inQuote && (c == ' ' || c == '\t') {
			break
		}
		prog.WriteByte(c)
	}
	argv = append(argv, prog.String())
	for {
		for i < len(cmd) && (cmd[i] == ' ' || cmd[i] == '\t') {
			i++
		}
		if i >= len(cmd) {
			return argv
		}
		var arg strings.Builder
		inQuote = false
		for i < len(cmd) {
			c := cmd[i]
			if !inQuote && (c == ' ' || c == '\t') {
				break
			}
			if c == '\\' {
				n := 0
				for i < len(cmd) && cmd[i] == '\\' {
					n++
					i++
				}
				if i < len(cmd) && cmd[i] == '"' {
					arg.WriteString(strings.Repeat(`\`, n/2))
					if n%2 == 1 {
						arg.WriteByte('"')
						i++
					}
					continue
				}
				arg.WriteString(strings.Repeat(`\`, n))
				continue
			}
			if c == '"' {
				// A "" inside quotes is a literal quote (the C runtime's rule
				// since 2008).
				if inQuote && i+1 < len(cmd) && cmd[i+1] == '"' {
					arg.WriteByte('"')
					i += 2
					continue
				}
				inQuote = !inQuote
				i++
				continue
			}
			arg.WriteByte(c)
			i++
		}
		argv = append(argv, arg.String())
	}
}
