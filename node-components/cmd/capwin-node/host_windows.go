//go:build windows

package main

import (
	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/host/windows"
)

func newHost() (host.Host, error) { return windows.New(), nil }

func runService(name, logFile string, argv []string) error {
	return windows.RunService(name, logFile, argv)
}
