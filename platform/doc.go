// Package platform is what the infrastructure reconcilers need from a cloud:
// check that a HybridCluster's platform can be used, drive a HybridMachine's
// VM one step towards running, clear its bootstrap data, delete it. Its
// errors and states are platform-neutral; each platform is a package under
// platform/ (platform/vsphere), picked by a Factory from the HybridCluster's
// spec. Only those packages import a cloud SDK.
package platform
