// Package validation holds the rules of a WindowsKubeadmConfig and its
// template, shared by the admission webhooks, the bootstrap reconciler and
// `capwin render`, so that all three refuse the same configs with the same
// field paths and messages.
package validation
