//go:build windows

package windows

import (
	"github.com/Microsoft/hnslib/hcn"
	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// The values the untagged files name in place of Windows' own, held to them
// when this package is built for Windows: make windows-check, which make
// test runs, builds it, so a value that differs fails the build here, where
// the tests of windows_test.go do not run. Each map has the key false and
// the comparison as a second key: a comparison that is false repeats the
// key false, which Go refuses.
var (
	_ = map[bool]struct{}{false: {}, uint64(scBootStart) == uint64(windows.SERVICE_BOOT_START): {}}
	_ = map[bool]struct{}{false: {}, uint64(scSystemStart) == uint64(windows.SERVICE_SYSTEM_START): {}}
	_ = map[bool]struct{}{false: {}, uint64(scAutoStart) == uint64(mgr.StartAutomatic): {}}
	_ = map[bool]struct{}{false: {}, uint64(scDemandStart) == uint64(mgr.StartManual): {}}
	_ = map[bool]struct{}{false: {}, uint64(scDisabled) == uint64(mgr.StartDisabled): {}}
	_ = map[bool]struct{}{false: {}, uint64(scStopped) == uint64(svc.Stopped): {}}
	_ = map[bool]struct{}{false: {}, uint64(scStartPending) == uint64(svc.StartPending): {}}
	_ = map[bool]struct{}{false: {}, uint64(scStopPending) == uint64(svc.StopPending): {}}
	_ = map[bool]struct{}{false: {}, uint64(scRunning) == uint64(svc.Running): {}}
	_ = map[bool]struct{}{false: {}, uint64(scContinuePending) == uint64(svc.ContinuePending): {}}
	_ = map[bool]struct{}{false: {}, uint64(scPausePending) == uint64(svc.PausePending): {}}
	_ = map[bool]struct{}{false: {}, uint64(scPaused) == uint64(svc.Paused): {}}
	_ = map[bool]struct{}{false: {}, uint64(scActionRestart) == uint64(mgr.ServiceRestart): {}}
	_ = map[bool]struct{}{false: {}, uint64(errorServiceSpecificError) == uint64(windows.ERROR_SERVICE_SPECIFIC_ERROR): {}}
	_ = map[bool]struct{}{false: {}, uint64(hnsEnableNonPersistent) == uint64(hcn.EnableNonPersistent): {}}
	_ = map[bool]struct{}{false: {}, uint64(hnsEndpointFlagsRemote) == uint64(hcn.EndpointFlagsRemoteEndpoint): {}}
	_ = map[bool]struct{}{false: {}, hnsPolicyNetAdapterName == string(hcn.NetAdapterName): {}}
	_ = map[bool]struct{}{false: {}, hnsPolicyProviderAddress == string(hcn.ProviderAddress): {}}
	_ = map[bool]struct{}{false: {}, hnsSubnetPolicyVSID == string(hcn.VSID): {}}
)
