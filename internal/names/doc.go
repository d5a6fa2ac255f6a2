// Package names derives the host names of machines: short, deterministic
// Windows computer names that both platforms give a VM.
package names
