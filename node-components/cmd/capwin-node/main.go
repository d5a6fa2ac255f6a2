// Command capwin-node is the capwin Windows node agent. This build has the
// validate command; install, join, status and collect-logs arrive with the
// node agent.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/capwin/capwin/node-components/nodeconfig"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage: capwin-node validate -f FILE   check a node configuration (- reads standard input)`

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	switch args[0] {
	case "validate":
		return validate(args[1:], stdin, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "capwin-node: unknown command %q\n%s\n", args[0], usage)
		return 2
	}
}

func validate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "the node configuration (JSON); - for standard input")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" {
		fmt.Fprintln(stderr, usage)
		return 2
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
		return 1
	}
	cfg, err := nodeconfig.Parse(data)
	if err != nil {
		var fieldErrs nodeconfig.Errors
		if errors.As(err, &fieldErrs) {
			fmt.Fprintf(stderr, "%s: invalid node configuration:\n", *file)
			for _, fe := range fieldErrs {
				fmt.Fprintf(stderr, "  %s\n", fe.Error())
			}
			return 1
		}
		fmt.Fprintf(stderr, "%s: %v\n", *file, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: valid %s for node %s (Kubernetes %s, %s %s)\n",
		*file, nodeconfig.SchemaVersion, cfg.NodeName, cfg.KubernetesVersion, cfg.Network.CNI, cfg.Network.Mode)
	return 0
}
