//go:build !windows

package main

import (
	"errors"

	"github.com/capwin/capwin/node-components/host"
)

var errNotWindows = errors.New("this command acts on a Windows node and this is not Windows (validate works anywhere)")

func newHost() (host.Host, error) { return nil, errNotWindows }

func runService(string, string, []string) error { return errNotWindows }
