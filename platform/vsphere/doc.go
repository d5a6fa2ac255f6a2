// Package vsphere is capwin's vSphere platform: one long-lived vCenter
// session per server and credentials, and the machine operations (clone,
// guestinfo, power, addresses, delete) done one non-blocking step at a time.
// Only this package imports govmomi.
package vsphere
