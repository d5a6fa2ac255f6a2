package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"

	infrav1 "github.com/capwin/capwin/api/infrastructure/v1alpha1"
	"github.com/capwin/capwin/platform"
)

// resume polls the operation recorded in status.operation once, through a
// poller made from its resume token. It returns done once the operation
// ended well (seen) or can no longer be followed (not seen: the resource
// is to be looked at afresh), the operation to record while it runs, and
// ErrOperationFailed when it failed.
func (p *Platform) resume(ctx context.Context, n resourceNames, op infrav1.MachineOperation) (done, seen bool, next infrav1.MachineOperation, err error) {
	switch op.Type {
	case infrav1.MachineOperationCreateNetworkInterface:
		poller, err := p.clients.interfaces.BeginCreateOrUpdate(ctx, p.group(), n.nic, armnetwork.Interface{}, &armnetwork.InterfacesClientBeginCreateOrUpdateOptions{ResumeToken: op.ID})
		return pollOnce(ctx, "creating network interface "+n.nic, op, poller, err)
	case infrav1.MachineOperationCreate:
		poller, err := p.clients.vms.BeginCreateOrUpdate(ctx, p.group(), n.vm, armcompute.VirtualMachine{}, &armcompute.VirtualMachinesClientBeginCreateOrUpdateOptions{ResumeToken: op.ID})
		return pollOnce(ctx, "creating VM "+n.vm, op, poller, err)
	case infrav1.MachineOperationPowerOn:
		poller, err := p.clients.vms.BeginStart(ctx, p.group(), n.vm, &armcompute.VirtualMachinesClientBeginStartOptions{ResumeToken: op.ID})
		return pollOnce(ctx, "starting VM "+n.vm, op, poller, err)
	case infrav1.MachineOperationDelete:
		poller, err := p.clients.vms.BeginDelete(ctx, p.group(), n.vm, &armcompute.VirtualMachinesClientBeginDeleteOptions{ResumeToken: op.ID})
		return pollOnce(ctx, "deleting VM "+n.vm, op, poller, err)
	case infrav1.MachineOperationDeleteNetworkInterface:
		poller, err := p.clients.interfaces.BeginDelete(ctx, p.group(), n.nic, &armnetwork.InterfacesClientBeginDeleteOptions{ResumeToken: op.ID})
		return pollOnce(ctx, "deleting network interface "+n.nic, op, poller, err)
	case infrav1.MachineOperationDeleteDisk:
		poller, err := p.clients.disks.BeginDelete(ctx, p.group(), n.disk, &armcompute.DisksClientBeginDeleteOptions{ResumeToken: op.ID})
		return pollOnce(ctx, "deleting disk "+n.disk, op, poller, err)
	}
	// Not an Azure operation (a status written by another platform's
	// code): the resources are looked at afresh.
	return true, false, infrav1.MachineOperation{}, nil
}

// started records an operation a Begin call started: its resume token,
// or a zero operation when it already ended (its error, if it failed).
func started[T any](ctx context.Context, typ infrav1.MachineOperationType, poller *runtime.Poller[T]) (infrav1.MachineOperation, error) {
	token, err := startedToken(ctx, string(typ), poller)
	if token == "" {
		return infrav1.MachineOperation{}, err
	}
	return infrav1.MachineOperation{Type: typ, ID: token}, err
}

// startedToken is the resume token of an operation a Begin call started,
// or "" when it already ended (its error, if it failed).
func startedToken[T any](ctx context.Context, what string, poller *runtime.Poller[T]) (string, error) {
	if poller.Done() {
		// Ended in its first answer: well, or not.
		if _, err := poller.Result(ctx); err != nil {
			return "", fmt.Errorf("%w: %w", platform.ErrOperationFailed, classify(what, err))
		}
		return "", nil
	}
	token, err := poller.ResumeToken()
	if err != nil {
		return "", fmt.Errorf("recording the operation %s: %w", what, err)
	}
	return token, nil
}

// pollOnce polls a resumed operation once. It returns done when the
// operation ended well (seen) or can no longer be followed (not seen); an
// operation that failed is ErrOperationFailed (and no operation to
// record); a poll Azure did not answer keeps op.
func pollOnce[T any](ctx context.Context, what string, op infrav1.MachineOperation, poller *runtime.Poller[T], resumeErr error) (done, seen bool, next infrav1.MachineOperation, err error) {
	done, seen, token, err := pollSeen(ctx, what, op.ID, poller, resumeErr)
	if token == "" {
		return done, seen, infrav1.MachineOperation{}, err
	}
	return done, seen, infrav1.MachineOperation{Type: op.Type, ID: token}, err
}

// pollToken polls the operation of a resume token once. It returns done
// when the operation ended well or can no longer be followed, and the
// token to record while it runs: "" once it ended or failed
// (ErrOperationFailed), the same token when Azure did not answer the poll.
func pollToken[T any](ctx context.Context, what, token string, poller *runtime.Poller[T], resumeErr error) (bool, string, error) {
	done, _, next, err := pollSeen(ctx, what, token, poller, resumeErr)
	return done, next, err
}

// pollSeen is pollToken that also says whether the operation was seen to
// end well (seen), rather than lost (its token unreadable, its status gone
// from Azure), which is done too.
func pollSeen[T any](ctx context.Context, what, token string, poller *runtime.Poller[T], resumeErr error) (done, seen bool, next string, err error) {
	if resumeErr != nil {
		// A token this build cannot read: the resource is looked at
		// afresh instead.
		return true, false, "", nil
	}
	if !poller.Done() {
		resp, err := poller.Poll(ctx)
		if resp != nil {
			// The poller has read the body into memory already.
			_ = resp.Body.Close()
		}
		if statusGone(err) {
			// Azure no longer keeps the operation's status: the
			// resource says how it ended.
			return true, false, "", nil
		}
		if err != nil {
			if failed(err) {
				return false, false, "", fmt.Errorf("%w: %w", platform.ErrOperationFailed, classify(what, err))
			}
			return false, false, token, classify("polling: "+what, err)
		}
	}
	if !poller.Done() {
		next, err := poller.ResumeToken()
		if err != nil {
			return false, false, token, fmt.Errorf("recording the operation %s: %w", what, err)
		}
		return false, false, next, nil
	}
	if _, err := poller.Result(ctx); err != nil {
		if !failed(err) {
			// The result could not be read (throttled, a server
			// error): read again from the same token.
			return false, false, token, classify("reading the result: "+what, err)
		}
		return false, false, "", fmt.Errorf("%w: %w", platform.ErrOperationFailed, classify(what, err))
	}
	return true, true, "", nil
}

// failed reports whether an operation's error is its own failure (ARM's
// answer of 200 with status Failed, or a 4xx) rather than an answer that
// did not come (throttled, a server error, no answer at all).
func failed(err error) bool {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return false
	}
	switch {
	case re.StatusCode == http.StatusRequestTimeout, re.StatusCode == http.StatusTooManyRequests, re.StatusCode >= 500:
		return false
	}
	return true
}

// statusGone reports whether a poll found the operation's status gone.
func statusGone(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}
