//go:build windows

package windows

import (
	"github.com/capwin/capwin/node-components/host"
)

// New returns the Windows machine capwin-node runs on. It must run as
// SYSTEM or an administrator: it manages services, HNS networks and
// HKEY_LOCAL_MACHINE.
func New() host.Host {
	return machine{}
}

type machine struct{}

var _ host.Host = machine{}

func (machine) Facts() host.Facts             { return facts{} }
func (machine) Services() host.Services       { return services{} }
func (machine) HNS() host.HNS                 { return hns{} }
func (machine) Environment() host.Environment { return environment{} }
func (machine) Shell() host.Shell             { return shell{} }

// FS is the local disk with Windows paths as they are; private files get a
// DACL for SYSTEM and Administrators only.
func (machine) FS() host.FS { return host.DirFS{Protect: protect} }
