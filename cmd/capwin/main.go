// Command capwin is capwin's command-line tool: `capwin dev` runs a cluster
// on simulators, `capwin render` previews the bootstrap data of a Windows
// node.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage: capwin COMMAND [flags]

commands:
  dev      run a Windows cluster on simulators and scale it (make dev)
  render   show the bootstrap data a Windows node would receive`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	switch args[0] {
	case "dev":
		return dev(args[1:], stdout, stderr)
	case "render":
		return render(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "capwin: unknown command %q\n%s\n", args[0], usage)
	return 2
}
