// Package webhooks defaults and validates every capwin kind, so that bad
// input is refused at admission with the field and the rule named, before
// any VM is created.
package webhooks
