// Command capwin-node is the capwin Windows node agent: install lays out the
// node bundle at image bake time, join turns a node configuration into a
// Kubernetes node at first boot, and status, reset and collect-logs help a
// person with a node that did not join. `capwin-node help` lists them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/capwin/capwin/node-components/agent"
	"github.com/capwin/capwin/node-components/host"
	"github.com/capwin/capwin/node-components/layout"
	"github.com/capwin/capwin/node-components/nodeconfig"
	"github.com/capwin/capwin/node-components/render"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, newHost)
	stop()
	os.Exit(code)
}

const usage = `usage: capwin-node COMMAND [flags]

  join [--config FILE]              join the cluster (first boot); resumes after a reboot or a failure
  install --bundle DIR|FILE.zip     lay out and verify the node bundle, register the services (image bake time)
  status [-o text|json]             the join's phases, the services, the HNS networks, the Windows licence and the platform
  reset                             undo a join so the machine can join again
  collect-logs -o FILE.zip          logs, rendered configuration (no secrets), services and HNS state
  validate -f FILE                  check a node configuration (- reads standard input)
  pause-image                       the pause image pinned for this machine's Windows build (image bake time: pre-pull it)

join exits 0 when the node joined, 1 on a failure that running again will not
fix, and 3 on one that may pass (run join again: it continues where it failed;
the bootstrap script reboots the machine and runs it again, a few times at most).`

// hostFunc opens the machine the agent acts on.
type hostFunc func() (host.Host, error)

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, open hostFunc) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return agent.ExitUsage
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "validate":
		return validate(args, stdin, stdout, stderr)
	case "service":
		return service(args, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return agent.ExitOK
	case "join", "install", "status", "reset", "collect-logs", "pause-image":
	default:
		fmt.Fprintf(stderr, "capwin-node: unknown command %q\n%s\n", cmd, usage)
		return agent.ExitUsage
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", layout.NodeConfig, "join: the node configuration")
	bundlePath := fs.String("bundle", "", "install: the node bundle (a directory or a .zip)")
	hyperv := fs.Bool("hyperv", false, "install: require the Hyper-V feature (for Hyper-V isolation)")
	output := fs.String("o", "", "status: text or json; collect-logs: the zip to write")
	timeout := fs.Duration("node-timeout", agent.DefaultNodeTimeout, "join: how long to wait for the kubelet and the pod network")
	if err := fs.Parse(args); err != nil {
		return agent.ExitUsage
	}
	h, err := open()
	if err != nil {
		fmt.Fprintf(stderr, "capwin-node %s: %v\n", cmd, err)
		return agent.ExitFailed
	}
	a := &agent.Agent{Host: h, Log: stderr, NodeTimeout: *timeout, ControlPlane: agent.KubeadmControlPlane{}, ClusterProgress: agent.ReportToCluster}
	switch cmd {
	case "join":
		err = a.Join(ctx, *config)
		if err != nil {
			fmt.Fprintf(stderr, "capwin-node join: %v\n", err)
		}
		return agent.ExitCode(err)
	case "install":
		err = a.Install(ctx, agent.InstallOptions{Bundle: *bundlePath, HyperV: *hyperv})
	case "reset":
		err = a.Reset(ctx)
	case "status":
		err = status(ctx, a, *output, stdout)
	case "collect-logs":
		err = collectLogs(ctx, a, *output)
	case "pause-image":
		err = pauseImage(ctx, h, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "capwin-node %s: %v\n", cmd, err)
		if errors.Is(err, errUsage) {
			return agent.ExitUsage
		}
		return agent.ExitFailed
	}
	return agent.ExitOK
}

var errUsage = errors.New("usage")

// pauseImage prints the pause image the pinned table names for the host's
// Windows build: the one join configures containerd with, unless the node
// configuration names another.
func pauseImage(ctx context.Context, h host.Host, stdout io.Writer) error {
	build, err := h.Facts().Build(ctx)
	if err != nil {
		return err
	}
	image, err := render.PauseImage(build)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, image)
	return err
}

func status(ctx context.Context, a *agent.Agent, output string, stdout io.Writer) error {
	s, err := a.Status(ctx)
	if err != nil {
		return err
	}
	switch output {
	case "", "text":
		return s.WriteText(stdout)
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	return fmt.Errorf("%w: -o must be text or json", errUsage)
}

func collectLogs(ctx context.Context, a *agent.Agent, output string) error {
	if output == "" {
		return fmt.Errorf("%w: -o FILE.zip is required", errUsage)
	}
	f, err := os.Create(output)
	if err != nil {
		return err
	}
	if err := a.CollectLogs(ctx, f); err != nil {
		f.Close() //nolint:errcheck
		return err
	}
	return f.Close()
}

func validate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "the node configuration (JSON); - for standard input")
	if err := fs.Parse(args); err != nil {
		return agent.ExitUsage
	}
	if *file == "" {
		fmt.Fprintln(stderr, usage)
		return agent.ExitUsage
	}
	var data []byte
	var err error
	if *file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(*file)
	}
	if err != nil {
		fmt.Fprintf(stderr, "capwin-node: reading %s: %v\n", *file, err)
		return agent.ExitFailed
	}
	cfg, err := nodeconfig.Parse(data)
	if err != nil {
		var fieldErrs nodeconfig.Errors
		if errors.As(err, &fieldErrs) {
			fmt.Fprintf(stderr, "%s: invalid node configuration:\n", *file)
			for _, fe := range fieldErrs {
				fmt.Fprintf(stderr, "  %s\n", fe.Error())
			}
			return agent.ExitFailed
		}
		fmt.Fprintf(stderr, "%s: %v\n", *file, err)
		return agent.ExitFailed
	}
	node := "node " + cfg.NodeName
	if cfg.NodeName == "" {
		node = "a node named after its computer name"
	}
	fmt.Fprintf(stdout, "%s: valid %s for %s (Kubernetes %s, %s %s)\n",
		*file, nodeconfig.SchemaVersion, node, cfg.KubernetesVersion, cfg.Network.CNI, cfg.Network.Mode)
	return agent.ExitOK
}

// service runs a program as a Windows service: `service run --name NAME
// --log-file FILE -- PROGRAM ARGS...` (the services join registers use it).
func service(args []string, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "run" {
		fmt.Fprintln(stderr, "usage: capwin-node service run --name NAME --log-file FILE -- PROGRAM [ARGS...]")
		return agent.ExitUsage
	}
	fs := flag.NewFlagSet("service run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the service's name")
	logFile := fs.String("log-file", "", "where the program's output goes")
	if err := fs.Parse(args[1:]); err != nil {
		return agent.ExitUsage
	}
	argv := fs.Args()
	if *name == "" || *logFile == "" || len(argv) == 0 {
		fmt.Fprintln(stderr, "usage: capwin-node service run --name NAME --log-file FILE -- PROGRAM [ARGS...]")
		return agent.ExitUsage
	}
	if err := runService(*name, *logFile, argv); err != nil {
		fmt.Fprintf(stderr, "capwin-node service run %s: %v\n", *name, err)
		return agent.ExitFailed
	}
	return agent.ExitOK
}
