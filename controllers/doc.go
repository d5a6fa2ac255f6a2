// Package controllers holds the infrastructure-capwin reconcilers.
package controllers
