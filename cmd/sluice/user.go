package main

// sluice user scram: set, delete and list users' SCRAM credentials, either
// through a broker (AlterUserScramCredentials / DescribeUserScramCredentials,
// as kafka-configs --bootstrap-server does) or straight in ZooKeeper
// (/config/users/<user> and a change notification, as kafka-configs
// --zookeeper does), which works before any broker has started: the
// brokers' own inter-broker user is made that way.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/coordinator/zk"
	"github.com/sluice-io/sluice/security/scram"
)

const userUsage = `usage: sluice user scram <command> [flags]

commands:
  set     create or replace a user's SCRAM credential
  delete  delete a user's SCRAM credential
  list    list users' SCRAM credentials (mechanisms and iterations)

Each takes --brokers host:port,... (through a broker) or --zookeeper
host:port[/chroot] (straight in ZooKeeper, no broker needed).
`

func runUser(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "scram" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprint(stdout, userUsage)
			return 0
		}
		fmt.Fprint(stderr, userUsage)
		return 2
	}
	return runSubcommand("user scram", userUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"set":    runUserScramSet,
		"delete": runUserScramDelete,
		"list":   runUserScramList,
	}, args[1:], stdout, stderr)
}

// scramTarget is where a user command acts: a broker or ZooKeeper.
type scramTarget struct {
	cf        *clientFlags
	zookeeper *string
}

func addScramTarget(c *command) *scramTarget {
	t := &scramTarget{cf: addClientFlags(c.fs)}
	t.zookeeper = c.fs.String("zookeeper", "", "write straight to ZooKeeper `host:port[/chroot]` instead of through --brokers")
	return t
}

// zk opens the ZooKeeper session; nil when --zookeeper is not given.
func (t *scramTarget) zk(ctx context.Context) (*zk.Client, error) {
	if *t.zookeeper == "" {
		return nil, nil
	}
	return zk.Connect(ctx, *t.zookeeper, zk.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

func mechanismFlag(c *command) *string {
	return c.fs.String("mechanism", "SCRAM-SHA-512", "SCRAM-SHA-256 or SCRAM-SHA-512")
}

func parseMechanism(name string) (*scram.Mechanism, kadm.ScramMechanism, error) {
	m, ok := scram.ByName(strings.ToUpper(name))
	if !ok {
		return nil, 0, fmt.Errorf("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", name)
	}
	return m, kadm.ScramMechanism(m.Type()), nil
}

func runUserScramSet(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice user scram set", `usage: sluice user scram set --user NAME --password PASSWORD [--mechanism M] [--iterations N]

Creates or replaces NAME's credential for mechanism M (salted with a fresh
random salt; the password itself is never stored) and prints
"Set SCRAM-SHA-512 credential for user NAME.".
`, stdout, stderr)
	t := addScramTarget(c)
	user := c.fs.String("user", "", "the user")
	password := c.fs.String("password", "", "the user's password")
	mech := mechanismFlag(c)
	iterations := c.fs.Int("iterations", scram.MinIterations, "PBKDF2 iterations, 4096 to 16384")
	if _, code, done := c.parse(args); done {
		return code
	}
	m, km, err := parseMechanism(*mech)
	if err != nil {
		return c.usageError("%v", err)
	}
	switch {
	case *user == "":
		return c.usageError("--user is required")
	case *password == "":
		return c.usageError("--password is required")
	case *iterations < scram.MinIterations || *iterations > scram.MaxIterations:
		return c.usageError("--iterations %d: want %d to %d", *iterations, scram.MinIterations, scram.MaxIterations)
	}
	ctx, cancel := adminContext()
	defer cancel()
	zc, err := t.zk(ctx)
	if err != nil {
		return c.fail(err)
	}
	if zc != nil {
		defer zc.Close()
		cred, err := m.NewCredential(*password, *iterations)
		if err != nil {
			return c.fail(err)
		}
		err = zc.AlterEntityConfig(coordinator.UserEntity(*user), func(cur map[string]string) (map[string]string, error) {
			if cur == nil {
				cur = map[string]string{}
			}
			cur[m.Name()] = cred.String()
			return cur, nil
		})
		if err != nil {
			return c.fail(err)
		}
	} else {
		adm, err := admin(ctx, t.cf)
		if err != nil {
			return c.fail(err)
		}
		defer adm.Close()
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: *user, Mechanism: km, Iterations: int32(*iterations), Password: *password}})
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			return c.fail(fmt.Errorf("user %s: %w", *user, err))
		}
	}
	fmt.Fprintf(stdout, "Set %s credential for user %s.\n", m.Name(), *user)
	return 0
}

func runUserScramDelete(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice user scram delete", `usage: sluice user scram delete --user NAME [--mechanism M]

Deletes NAME's credential for mechanism M and prints
"Deleted SCRAM-SHA-512 credential for user NAME.". A user without one is
an error.
`, stdout, stderr)
	t := addScramTarget(c)
	user := c.fs.String("user", "", "the user")
	mech := mechanismFlag(c)
	if _, code, done := c.parse(args); done {
		return code
	}
	m, km, err := parseMechanism(*mech)
	if err != nil {
		return c.usageError("%v", err)
	}
	if *user == "" {
		return c.usageError("--user is required")
	}
	ctx, cancel := adminContext()
	defer cancel()
	zc, err := t.zk(ctx)
	if err != nil {
		return c.fail(err)
	}
	errMissing := errors.New("no " + m.Name() + " credential")
	if zc != nil {
		defer zc.Close()
		err = zc.AlterEntityConfig(coordinator.UserEntity(*user), func(cur map[string]string) (map[string]string, error) {
			if _, ok := cur[m.Name()]; !ok {
				return nil, errMissing
			}
			delete(cur, m.Name())
			return cur, nil
		})
	} else {
		var adm *kadm.Client
		if adm, err = admin(ctx, t.cf); err != nil {
			return c.fail(err)
		}
		defer adm.Close()
		var res kadm.AlteredUserSCRAMs
		res, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: *user, Mechanism: km}}, nil)
		if err == nil {
			err = res.Error()
		}
	}
	if err != nil {
		return c.fail(fmt.Errorf("user %s: %w", *user, err))
	}
	fmt.Fprintf(stdout, "Deleted %s credential for user %s.\n", m.Name(), *user)
	return 0
}

func runUserScramList(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice user scram list", `usage: sluice user scram list [--user NAME ...]

Prints, for each user with a credential (or each NAME), one line as
kafka-configs --describe does:
  SCRAM credential configs for user-principal 'NAME' are SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=8192
`, stdout, stderr)
	t := addScramTarget(c)
	var users listFlag
	c.fs.Var(&users, "user", "a user to list (repeatable; default every user)")
	if _, code, done := c.parse(args); done {
		return code
	}
	ctx, cancel := adminContext()
	defer cancel()
	zc, err := t.zk(ctx)
	if err != nil {
		return c.fail(err)
	}
	creds := map[string][]string{} // user → "MECH=iterations=N"
	if zc != nil {
		defer zc.Close()
		if len(users) == 0 {
			paths, err := zc.Entities("users")
			if err != nil {
				return c.fail(err)
			}
			for _, p := range paths {
				if e, err := coordinator.ParseEntityPath(p); err == nil && e.HasUser && !e.HasClientID {
					users = append(users, e.User)
				}
			}
		}
		for _, u := range users {
			cfgs, err := zc.EntityConfig(coordinator.UserEntity(u))
			if err != nil {
				return c.fail(err)
			}
			for _, m := range scram.Mechanisms {
				if v, ok := cfgs[m.Name()]; ok {
					cred, err := m.ParseCredential(v)
					if err != nil {
						return c.fail(fmt.Errorf("user %s: %w", u, err))
					}
					creds[u] = append(creds[u], fmt.Sprintf("%s=iterations=%d", m.Name(), cred.Iterations))
				}
			}
		}
	} else {
		adm, err := admin(ctx, t.cf)
		if err != nil {
			return c.fail(err)
		}
		defer adm.Close()
		described, err := adm.DescribeUserSCRAMs(ctx, users...)
		if err != nil {
			return c.fail(err)
		}
		for u, d := range described {
			if d.Err != nil {
				return c.fail(fmt.Errorf("user %s: %w", u, d.Err))
			}
			for _, ci := range d.CredInfos {
				if m, ok := scram.ByType(int8(ci.Mechanism)); ok {
					creds[u] = append(creds[u], fmt.Sprintf("%s=iterations=%d", m.Name(), ci.Iterations))
				}
			}
		}
	}
	names := make([]string, 0, len(creds))
	for u := range creds {
		names = append(names, u)
	}
	slices.Sort(names)
	for _, u := range names {
		slices.Sort(creds[u])
		fmt.Fprintf(stdout, "SCRAM credential configs for user-principal '%s' are %s\n", u, strings.Join(creds[u], ", "))
	}
	return 0
}
