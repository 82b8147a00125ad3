// Command sluice is the one sluice binary: `sluice broker` runs a broker;
// further subcommands (topics, console producer and consumer, benchmarks)
// join it.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage: sluice <command> [flags]

commands:
  broker    run a broker (no flags: single node on localhost:9092, data in ./sluice-data)
  bench     load-test any Kafka-compatible broker: bench produce|consume|e2e --brokers ...

Run "sluice <command> -h" for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "broker":
		return runBroker(args[1:], stdout, stderr)
	case "bench":
		return runBench(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q\n\n%s", args[0], usage)
	return 2
}
