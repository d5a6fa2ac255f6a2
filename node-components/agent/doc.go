// Package agent is the Windows node agent: join, install, status, reset and
// collect-logs, each a sequence of named, logged and resumable phases that
// act on the machine only through the host seam.
package agent
