// Package sim is an in-memory Windows host for tests and the simulation, in
// the spirit of vcsim: it implements the host seam and enforces the rules of
// the real machine that the agent depends on — the service manager's
// dependencies, start order, disabled services and restart-on-failure,
// non-persistent HNS networks that vanish on reboot, an adapter that resets
// when its first network is created, and the host's Windows build. It
// refuses the service registrations, HNS networks and environment variable
// names that host/windows refuses (host.CheckServiceSpec, host.CheckNetwork,
// host.CheckEnvironmentName).
package sim
