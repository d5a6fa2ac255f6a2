//go:build !windows

package windows

import "errors"

// RunService runs argv as the Windows service name; it is only available
// on Windows.
func RunService(name, logFile string, argv []string) error {
	return errors.New("service run is only available on Windows")
}
