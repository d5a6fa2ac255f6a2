// Package validate holds the field-format checks that the infrastructure
// webhooks and the bootstrap validation both use, so that neither provider
// imports the other's rules.
package validate
