// Package validation holds the rules of a WindowsKubeadmConfig and its
// template with their field paths and messages. The admission webhooks
// apply them all (ValidateConfig), sparing an update what the object was
// admitted with before a rule refused it (RatchetUpdate); the bootstrap
// reconciler applies those
// that need the Cluster (ValidateConfigForCluster), and `capwin render`
// those of the spec alone (ValidateConfigSpec).
package validation
