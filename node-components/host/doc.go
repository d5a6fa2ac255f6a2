// Package host is the seam between the node agent and the Windows machine it
// configures: services, HNS networks, host facts, the machine environment,
// files and PowerShell. The agent sees only these interfaces; host/windows
// implements them on Windows and host/sim in memory, for tests and the
// simulation.
package host
