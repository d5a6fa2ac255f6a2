package azure

import (
	"context"
	"fmt"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// BootstrapDataCleared is true: Azure keeps a VM's customData write-only
// (ARM never returns it, and it cannot be changed or removed), so there is
// nothing capwin can clear; KeptBootstrapData says so on the condition.
func (p *Platform) BootstrapDataCleared(context.Context, *platform.Machine) (bool, error) {
	return true, nil
}

// KeptBootstrapData says where Azure keeps the bootstrap data.
func (p *Platform) KeptBootstrapData() string {
	return "Azure keeps the VM's customData, which capwin cannot remove; ARM never returns it, and its bootstrap token expires"
}

// WriteBootstrapData is refused: Azure does not let a VM's customData
// change, and EnsureMachine never reports it stale.
func (p *Platform) WriteBootstrapData(context.Context, *platform.Machine) (infrav1.MachineOperation, error) {
	return infrav1.MachineOperation{}, fmt.Errorf("%w: Azure does not let a VM's customData change", platform.ErrNotSupported)
}

// ClearBootstrapData is never needed: BootstrapDataCleared is always true.
func (p *Platform) ClearBootstrapData(context.Context, *platform.Machine) (infrav1.MachineOperation, error) {
	return infrav1.MachineOperation{}, nil
}
