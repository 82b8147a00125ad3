package main

// sluice quota: describe and alter client quotas (DescribeClientQuotas,
// AlterClientQuotas) of users and client ids, with output shaped like
// Kafka's kafka-configs.sh --describe --entity-type users/clients:
//
//	Quota configs for user-principal 'alice', client-id 'c1' are producer_byte_rate=1048576.0
//
// Values print as Java prints a double, as kafka-configs does.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

const quotaUsage = `usage: sluice quota <command> [flags]

commands:
  describe   print client quotas (all, or the entity the flags name)
  alter      set (--add) or remove (--delete) quotas of one entity

An entity is a user (--user NAME or --user-default), a client id
(--client-id ID or --client-id-default), or both. Quota keys:
producer_byte_rate, consumer_byte_rate (bytes/s), request_percentage
(percent of one thread), controller_mutation_rate.

Run "sluice quota <command> -h" for a command's flags.
`

func runQuota(args []string, stdout, stderr io.Writer) int {
	return runSubcommand("quota", quotaUsage, map[string]func([]string, io.Writer, io.Writer) int{
		"describe": runQuotaDescribe,
		"alter":    runQuotaAlter,
	}, args, stdout, stderr)
}

// entityFlags name a quota entity.
type entityFlags struct {
	user, client               string
	userDefault, clientDefault bool
	fs                         *flag.FlagSet
}

func addEntityFlags(fs *flag.FlagSet) *entityFlags {
	e := &entityFlags{fs: fs}
	fs.StringVar(&e.user, "user", "", "the user (principal name) `NAME`")
	fs.BoolVar(&e.userDefault, "user-default", false, "the default user")
	fs.StringVar(&e.client, "client-id", "", "the client `ID`")
	fs.BoolVar(&e.clientDefault, "client-id-default", false, "the default client id")
	return e
}

// set reports whether the flag name was given.
func (e *entityFlags) set(name string) bool {
	found := false
	e.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// entity is the entity the flags name (empty if none).
func (e *entityFlags) entity() (kadm.ClientQuotaEntity, error) {
	var out kadm.ClientQuotaEntity
	add := func(typ, flagName string, name string, def bool) error {
		given := e.set(flagName)
		switch {
		case given && def:
			return fmt.Errorf("--%s and --%s-default name different entities: give one", flagName, flagName)
		case given && name == "":
			return fmt.Errorf("--%s: the name must not be empty", flagName)
		case given:
			out = append(out, kadm.ClientQuotaEntityComponent{Type: typ, Name: &name})
		case def:
			out = append(out, kadm.ClientQuotaEntityComponent{Type: typ})
		}
		return nil
	}
	if err := add("user", "user", e.user, e.userDefault); err != nil {
		return nil, err
	}
	if err := add("client-id", "client-id", e.client, e.clientDefault); err != nil {
		return nil, err
	}
	return out, nil
}

func runQuotaDescribe(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice quota describe", `usage: sluice quota describe [--user NAME | --user-default] [--client-id ID | --client-id-default]

Prints a line per entity with quotas. Without entity flags, every entity;
with them, only the entity they name (as kafka-configs --describe with
--entity-name or --entity-default).
`, stdout, stderr)
	cf := addClientFlags(c.fs)
	ef := addEntityFlags(c.fs)
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return c.usageError("unexpected argument %q", pos[0])
	}
	entity, err := ef.entity()
	if err != nil {
		return c.usageError("%v", err)
	}
	var filter []kadm.DescribeClientQuotaComponent
	for _, e := range entity {
		f := kadm.DescribeClientQuotaComponent{Type: e.Type, MatchName: e.Name, MatchType: 0}
		if e.Name == nil {
			f.MatchType = 1
		}
		filter = append(filter, f)
	}
	ctx, adm, release, err := openAdmin(cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	described, err := adm.DescribeClientQuotas(ctx, len(filter) > 0, filter)
	if err != nil {
		return c.fail(err)
	}
	lines := make([]string, 0, len(described))
	for _, d := range described {
		values := make([]string, 0, len(d.Values))
		for _, v := range d.Values {
			values = append(values, v.Key+"="+javaDouble(v.Value))
		}
		lines = append(lines, "Quota configs for "+entityText(d.Entity)+" are "+strings.Join(values, ", "))
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	return 0
}

func runQuotaAlter(args []string, stdout, stderr io.Writer) int {
	c := newCommand("sluice quota alter", `usage: sluice quota alter (--user NAME | --user-default) and/or (--client-id ID | --client-id-default) [--add key=value,...] [--delete key,...]

Sets and removes quotas of one entity, as kafka-configs --alter
--add-config/--delete-config does; the entity's other keys stay.
`, stdout, stderr)
	cf := addClientFlags(c.fs)
	ef := addEntityFlags(c.fs)
	var adds, deletes listFlag
	c.fs.Var(&adds, "add", "`key=value` quotas to set, comma-separated (repeatable)")
	c.fs.Var(&deletes, "delete", "`key` quotas to remove, comma-separated (repeatable)")
	pos, code, done := c.parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return c.usageError("unexpected argument %q", pos[0])
	}
	entity, err := ef.entity()
	if err != nil {
		return c.usageError("%v", err)
	}
	if len(entity) == 0 {
		return c.usageError("name an entity: --user, --user-default, --client-id or --client-id-default")
	}
	var ops []kadm.AlterClientQuotaOp
	kvs, err := keyValues(splitCommas(adds), "add")
	if err != nil {
		return c.usageError("%v", err)
	}
	for _, kv := range kvs {
		v, err := strconv.ParseFloat(kv[1], 64)
		if err != nil {
			return c.usageError("--add %s=%s: not a number", kv[0], kv[1])
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: kv[0], Value: v})
	}
	for _, k := range splitCommas(deletes) {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
	}
	if len(ops) == 0 {
		return c.usageError("nothing to change: give --add or --delete")
	}
	ctx, adm, release, err := openAdmin(cf)
	if err != nil {
		return c.fail(err)
	}
	defer release()
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
	if err != nil {
		return c.fail(err)
	}
	for _, r := range res {
		if r.Err != nil {
			var ke *kerr.Error
			name := r.Err.Error()
			if errors.As(r.Err, &ke) {
				name = ke.Message
			}
			return c.fail(fmt.Errorf("%s: %s", name, r.ErrMessage))
		}
	}
	fmt.Fprintf(stdout, "Completed updating config for %s.\n", entityText(entity))
	return 0
}

// splitCommas splits each item at commas, dropping empty parts.
func splitCommas(items []string) []string {
	var out []string
	for _, it := range items {
		for _, p := range strings.Split(it, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// entityText is kafka-configs' words for an entity: "user-principal
// 'alice', client-id 'c1'", "the default client-id".
func entityText(e kadm.ClientQuotaEntity) string {
	var parts []string
	for _, typ := range []string{"user", "client-id", "ip"} {
		for _, c := range e {
			if c.Type != typ {
				continue
			}
			word := typ
			if typ == "user" {
				word = "user-principal"
			}
			if c.Name == nil {
				parts = append(parts, "the default "+word)
			} else {
				parts = append(parts, word+" '"+*c.Name+"'")
			}
		}
	}
	return strings.Join(parts, ", ")
}

// javaDouble formats v as Java's Double.toString: "1048576.0",
// "12.5", "1.0E7".
func javaDouble(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case math.IsNaN(v):
		return "NaN"
	}
	if a := math.Abs(v); a == 0 || a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'E', -1, 64) // 1.048576E+07
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	n, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(n)
}
