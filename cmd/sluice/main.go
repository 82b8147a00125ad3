// Command sluice is the one sluice binary: `sluice broker` runs a broker,
// `sluice topic`, `sluice produce`, `sluice consume` and `sluice group` are
// console tools for any Kafka-compatible broker, `sluice bench` load-tests
// one.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage: sluice <command> [flags]

commands:
  broker         run a broker (no flags: single node on localhost:9092, data in ./sluice-data)
  local-cluster  run ZooKeeper and N brokers on 127.0.0.1 (default 3, ports 9092 on)
  topic          create, list, describe, alter-config or delete topics
  produce        send lines of standard input as records: produce TOPIC
  consume        print records of a topic: consume TOPIC [--group GROUP]
  group          list, describe, delete consumer groups or reset their offsets
  cluster        the cluster's brokers: cluster brokers|rebalance|decommission ID
  acl            ACLs: acl list|add|remove, with kafka-acls' flags
  quota          describe or alter client quotas of users and client ids
  user           users' SCRAM credentials: user scram set|delete|list (--brokers or --zookeeper)
  bench          load-test any Kafka-compatible broker: bench produce|consume|e2e --brokers ...

The console tools (topic, produce, consume, group, acl) take --brokers host:port,...
(default localhost:9092, or $SLUICE_BROKERS).

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
	case "local-cluster":
		return runLocalCluster(args[1:], stdout, stderr)
	case "topic":
		return runTopic(args[1:], stdout, stderr)
	case "produce":
		return runProduce(args[1:], os.Stdin, stdout, stderr)
	case "consume":
		return runConsume(args[1:], stdout, stderr)
	case "group":
		return runGroup(args[1:], stdout, stderr)
	case "cluster":
		return runCluster(args[1:], stdout, stderr)
	case "user":
		return runUser(args[1:], stdout, stderr)
	case "acl":
		return runACL(args[1:], stdout, stderr)
	case "quota":
		return runQuota(args[1:], stdout, stderr)
	case "bench":
		return runBench(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q\n\n%s", args[0], usage)
	return 2
}
