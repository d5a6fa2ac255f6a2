package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeplatform"
)

// Status is what capwin-node status shows.
type Status struct {
	// Joined is when the join finished, if it did.
	Joined *time.Time `json:"joined,omitempty"`
	// Progress is the last progress the join reported.
	Progress *Progress `json:"progress,omitempty"`
	// Phases are the phases that finished.
	Phases      []PhaseRecord   `json:"phases"`
	Services    []ServiceStatus `json:"services"`
	HNSNetworks []host.Network  `json:"hnsNetworks"`
	// SuccessSentinel tells whether Cluster API's sentinel file exists.
	SuccessSentinel bool `json:"successSentinel"`
	// Licence is Windows' licence; LicenceError says why it could not be
	// read.
	Licence      *host.Licence `json:"licence,omitempty"`
	LicenceError string        `json:"licenceError,omitempty"`
	// Platform is the platform the machine's firmware names (vsphere,
	// azure), with the firmware's facts and where the node's user data
	// came from; PlatformError says why it is not known.
	Platform      string         `json:"platform,omitempty"`
	Hardware      *host.Hardware `json:"hardware,omitempty"`
	UserData      string         `json:"userData,omitempty"`
	PlatformError string         `json:"platformError,omitempty"`
}

// ServiceStatus is one of the node's services.
type ServiceStatus struct {
	Name      string            `json:"name"`
	State     host.ServiceState `json:"state,omitempty"`
	StartType host.StartType    `json:"startType,omitempty"`
	// Registered is false for a service that does not exist.
	Registered bool `json:"registered"`
}

// Status reads the node's join state, services and HNS networks.
func (a *Agent) Status(ctx context.Context) (*Status, error) {
	fsys := a.Host.FS()
	st, err := LoadState(fsys)
	if err != nil {
		return nil, err
	}
	s := &Status{Joined: st.Joined, Phases: st.Phases}
	if p, err := ReadProgress(fsys); err == nil {
		s.Progress = p
	}
	for _, name := range serviceNames {
		spec, state, err := a.Host.Services().Get(ctx, name)
		switch {
		case errors.Is(err, host.ErrNotExist):
			s.Services = append(s.Services, ServiceStatus{Name: name})
		case err != nil:
			return nil, fmt.Errorf("reading the %s service: %w", name, err)
		default:
			s.Services = append(s.Services, ServiceStatus{Name: name, State: state, StartType: spec.StartType, Registered: true})
		}
	}
	nets, err := a.Host.HNS().Networks(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing HNS networks: %w", err)
	}
	s.HNSNetworks = nets
	s.SuccessSentinel, _ = fsys.Exists(layout.SuccessSentinel)
	// The rest of the status stands without these.
	if l, err := a.Host.Facts().Licence(ctx); err != nil {
		s.LicenceError = err.Error()
	} else {
		s.Licence = &l
	}
	if hw, err := a.Host.Facts().Hardware(ctx); err != nil {
		s.PlatformError = err.Error()
	} else {
		s.Hardware = &hw
		if d, err := nodeplatform.Detect(hw); err != nil {
			s.PlatformError = err.Error()
		} else {
			s.Platform, s.UserData = d.Name(), d.UserData()
		}
	}
	return s, nil
}

// licenceText says a licence for a person, and what an evaluation's end
// means for the node. An evaluation that has ended reports Unlicensed or,
// as most report it, Notification.
func licenceText(l host.Licence) string {
	text := l.Edition + ", " + string(l.Status)
	if l.Channel != "" {
		text += " (" + l.Channel + ")"
	}
	ended := l.Status == host.LicenceUnlicensed || l.Status == host.LicenceNotification
	// A KMS client's days are those of its activation, which it renews
	// every 7 days: not a date anyone needs to act on.
	if l.RemainingMinutes > 0 && (l.Evaluation || l.Status != host.LicenceLicensed) {
		text += fmt.Sprintf(", %d days left", l.RemainingMinutes/(24*60))
	}
	switch {
	case l.Evaluation && ended:
		text += ": the evaluation has ended, and Windows shuts this machine down every hour: replace the node with one from a licensed image"
	case l.Evaluation:
		text += ": an evaluation; once it ends Windows shuts this machine down every hour"
	case l.Status != host.LicenceLicensed:
		text += ": not activated"
	}
	return text
}

// WriteText writes the status for a person.
func (s *Status) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	switch {
	case s.Joined != nil:
		fmt.Fprintf(tw, "Join:\tjoined at %s\n", s.Joined.Format(time.RFC3339))
	case s.Progress != nil:
		line := fmt.Sprintf("%s in phase %s", s.Progress.State, s.Progress.Phase)
		if s.Progress.Message != "" {
			line += ": " + s.Progress.Message
		}
		if s.Progress.State == ProgressFailed && s.Progress.Retryable {
			line += " (retryable: run capwin-node join again)"
		}
		fmt.Fprintf(tw, "Join:\t%s\n", line)
	default:
		fmt.Fprintf(tw, "Join:\tnot started\n")
	}
	fmt.Fprintf(tw, "Sentinel:\t%s %v\n", layout.SuccessSentinel, s.SuccessSentinel)
	switch {
	case s.Platform != "":
		fmt.Fprintf(tw, "Platform:\t%s (%s %s", s.Platform, s.Hardware.Manufacturer, s.Hardware.Product)
		if s.Hardware.UUID != "" {
			fmt.Fprintf(tw, ", UUID %s", s.Hardware.UUID)
		}
		fmt.Fprintf(tw, "); user data from %s\n", s.UserData)
	case s.PlatformError != "":
		fmt.Fprintf(tw, "Platform:\tunknown: %s\n", s.PlatformError)
	}
	switch {
	case s.Licence != nil:
		fmt.Fprintf(tw, "Licence:\t%s\n", licenceText(*s.Licence))
	case s.LicenceError != "":
		fmt.Fprintf(tw, "Licence:\tunknown: %s\n", s.LicenceError)
	}
	fmt.Fprintf(tw, "\nPHASE\tFINISHED\tTOOK\tWAITED\tMESSAGE\n")
	for _, p := range s.Phases {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, p.Finished.Format(time.RFC3339), p.Duration.Round(time.Millisecond), p.Waited.Round(time.Millisecond), p.Message)
	}
	fmt.Fprintf(tw, "\nSERVICE\tSTATE\tSTART TYPE\n")
	for _, svc := range s.Services {
		if !svc.Registered {
			fmt.Fprintf(tw, "%s\tnot registered\t\n", svc.Name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", svc.Name, svc.State, svc.StartType)
	}
	fmt.Fprintf(tw, "\nHNS NETWORK\tTYPE\tSUBNET\tID\n")
	for _, n := range s.HNSNetworks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.Name, n.Type, n.AddressPrefix, n.ID)
	}
	if len(s.HNSNetworks) == 0 {
		fmt.Fprintf(tw, "%s\t\t\t\n", strings.Repeat("-", 4))
	}
	return tw.Flush()
}
