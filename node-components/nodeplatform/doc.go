// Package nodeplatform holds what differs on a Windows node between the
// platforms capwin runs it on: one driver per platform (vSphere, Azure),
// detected from the machine's firmware.
//
// The driver is detected rather than named in the node configuration
// because what it will carry must work without one: the diagnosis channel
// reports a configuration the agent cannot parse, and the boot step runs
// before anything is read. The management side's counterpart is the
// platform package of the main module.
//
// Today a driver names its platform, recognises its machine and says where
// the node's user data came from (capwin-node status shows both). The
// boot step's platform parts and the credential-less status channel are
// added here by the issues that build them.
package nodeplatform
