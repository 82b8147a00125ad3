package quota

// The client quotas' administration and loading: Admin keeps a Manager in
// step with the entity configs of a Store (the broker's metadata backend:
// /config/users and /config/clients in ZooKeeper, the metadata file on a
// single node) and answers DescribeClientQuotas and AlterClientQuotas.
//
// Loading:
//   - Load reads every user and client-id entity at start; LoadEntity
//     re-reads one another broker changed. A value that is not a number
//     is logged and ignored; keys other than the quota keys (SCRAM
//     credentials share a user's configs) are not the quotas' business.
//
// DescribeClientQuotas, as Kafka 3.9's ZkAdminManager.describeClientQuotas:
//   - The filter's components each name an entity type ("user",
//     "client-id", "ip") and a match: exact (match type 0, a name), the
//     default entity (1), or any entity of the type (2). A repeated type,
//     an empty type or ip with user or client-id are INVALID_REQUEST;
//     another type UNSUPPORTED_VERSION ("Custom entity type '...' not
//     supported"), each with Kafka's message and no entries.
//   - An entity is described when it has quota keys and every component
//     matches it; without strict, entities with further parts match too
//     (a user component also matches that user's user/client-id
//     entities); with strict, only entities with exactly the components'
//     types. The values are the quota keys only (SCRAM credentials, which
//     share a user's configs, never show).
//   - Entities are read from the store (Store.Entities); the order is
//     theirs (users first, by entity path), Kafka's is a map's. sluice
//     keeps no ip quotas: an ip filter describes nothing.
//
// AlterClientQuotas, as Kafka 3.9's ZkAdminManager.alterClientQuotas:
//   - Each entry names an entity by components of type "user" and
//     "client-id" (a null name is the default entity, <default>); it is a
//     user, a client id, or a user and a client id. No component, an
//     unknown type, an empty name are INVALID_REQUEST for that entry, each
//     with Kafka's message; a repeated type keeps the last, as Kafka's map.
//   - Ops set a key (producer_byte_rate and consumer_byte_rate must be
//     whole numbers, "must be a LONG value"; request_percentage and
//     controller_mutation_rate are doubles) or remove one (any key, known
//     or not, as Kafka). Another key is INVALID_REQUEST ("Invalid
//     configuration key"). No range is checked, as in Kafka's ZooKeeper
//     mode.
//   - The entity's configs are altered in place (Store.AlterEntityConfigs):
//     the keys not touched, SCRAM credentials among them, stay. The change
//     is applied to the Manager at once; every other broker applies it
//     from its notification (LoadEntity).
//   - ValidateOnly checks everything and writes nothing.
//   - Deliberate difference: "ip" entities (connection_creation_rate) are
//     not served: INVALID_REQUEST ("IP quotas are not supported"), also
//     mixed with a user or client id (Kafka's message then).
//
// Authorization is the caller's: Admin answers what it is asked.

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
)

// Store is where the entities' configs are kept: the methods of
// coordinator.Coordinator the quotas use, with its semantics.
type Store interface {
	// Entities lists the entity paths under "users" or "clients" that
	// have configs, sorted.
	Entities(entityType string) ([]string, error)
	// EntityConfigs returns the configs of the entity at path.
	EntityConfigs(path string) (map[string]string, error)
	// AlterEntityConfigs replaces the entity's configs with what alter
	// returns from the current ones, atomically.
	AlterEntityConfigs(path string, alter func(cur map[string]string) (map[string]string, error)) error
}

// Kafka's entity types (ClientQuotaEntity).
const (
	EntityUser     = "user"
	EntityClientID = "client-id"
	EntityIP       = "ip"
)

// Admin administers and loads the client quotas of one broker.
type Admin struct {
	store Store
	m     *Manager
	log   *slog.Logger
}

// NewAdmin makes the administration of m's quotas over store.
func NewAdmin(store Store, m *Manager, log *slog.Logger) *Admin {
	return &Admin{store: store, m: m, log: log}
}

// Load reads every user and client-id entity's quotas.
func (a *Admin) Load() {
	for _, typ := range []string{"users", "clients"} {
		paths, err := a.store.Entities(typ)
		if err != nil {
			a.log.Warn("reading client quotas", "entities", typ, "err", err)
			continue
		}
		for _, p := range paths {
			a.LoadEntity(p)
		}
	}
}

// LoadEntity applies the quotas the entity at path has now.
func (a *Admin) LoadEntity(path string) {
	name, err := coordinator.ParseEntityPath(path)
	if err != nil {
		a.log.Warn("client quota entity", "path", path, "err", err)
		return
	}
	cfgs, err := a.store.EntityConfigs(path)
	if err != nil {
		a.log.Warn("reading client quotas", "entity", path, "err", err)
		return
	}
	a.apply(entityOf(name), cfgs)
}

// apply sets e's quotas from its entity configs.
func (a *Admin) apply(e Entity, cfgs map[string]string) {
	values := map[string]float64{}
	for _, k := range Keys {
		v, ok := cfgs[k]
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			a.log.Warn("client quota is not a number; ignored", "user", e.User, "client_id", e.ClientID, "key", k, "value", v)
			continue
		}
		values[k] = f
	}
	a.m.SetEntity(e, values)
}

// entityOf is the quota entity of a parsed entity path.
func entityOf(n coordinator.EntityName) Entity {
	var e Entity
	if n.HasUser {
		e.User = n.User
	}
	if n.HasClientID {
		e.ClientID = n.ClientID
	}
	return e
}

// match is one filter component: nil for none; any, or name (nil: the
// default entity).
type match struct {
	any  bool
	name *string
}

// Describe answers a DescribeClientQuotas request.
func (a *Admin) Describe(req *kmsg.DescribeClientQuotasRequest) *kmsg.DescribeClientQuotasResponse {
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(code int16, msg string) *kmsg.DescribeClientQuotasResponse {
		resp.ErrorCode, resp.ErrorMessage, resp.Entries = code, &msg, nil
		return resp
	}
	var user, client, ip *match
	for _, comp := range req.Components {
		m := &match{}
		switch comp.MatchType {
		case 0:
			if comp.Match == nil {
				return fail(kerr.InvalidRequest.Code, "Exact match of "+comp.EntityType+" without a name")
			}
			m.name = comp.Match
		case 1:
		case 2:
			m.any = true
		default:
			return fail(kerr.InvalidRequest.Code, "Unexpected match type: "+strconv.Itoa(int(comp.MatchType)))
		}
		var slot **match
		switch comp.EntityType {
		case EntityUser:
			slot = &user
		case EntityClientID:
			slot = &client
		case EntityIP:
			slot = &ip
		case "":
			return fail(kerr.InvalidRequest.Code, "Unexpected empty filter component entity type")
		default:
			return fail(kerr.UnsupportedVersion.Code, "Custom entity type '"+comp.EntityType+"' not supported")
		}
		if *slot != nil {
			what := comp.EntityType
			if what == EntityClientID {
				what = "client"
			}
			return fail(kerr.InvalidRequest.Code, "Duplicate "+what+" filter component entity type")
		}
		*slot = m
	}
	if ip != nil && (user != nil || client != nil) {
		return fail(kerr.InvalidRequest.Code, "Invalid entity filter component combination, IP filter component should not be used with user or clientId filter component.")
	}
	if ip != nil || len(req.Components) == 0 && req.Strict {
		return resp
	}
	var paths []string
	for _, typ := range []string{"users", "clients"} {
		ps, err := a.store.Entities(typ)
		if err != nil {
			return fail(kerr.UnknownServerError.Code, err.Error())
		}
		paths = append(paths, ps...)
	}
	for _, p := range paths {
		n, err := coordinator.ParseEntityPath(p)
		if err != nil || !user.matches(n.HasUser, n.User, req.Strict) || !client.matches(n.HasClientID, n.ClientID, req.Strict) {
			continue
		}
		cfgs, err := a.store.EntityConfigs(p)
		if err != nil {
			return fail(kerr.UnknownServerError.Code, err.Error())
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, k := range Keys {
			v, ok := cfgs[k]
			if !ok {
				continue
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				continue
			}
			val := kmsg.NewDescribeClientQuotasResponseEntryValue()
			val.Key, val.Value = k, f
			entry.Values = append(entry.Values, val)
		}
		if len(entry.Values) == 0 {
			continue
		}
		if n.HasUser {
			entry.Entity = append(entry.Entity, describedEntity(EntityUser, n.User))
		}
		if n.HasClientID {
			entry.Entity = append(entry.Entity, describedEntity(EntityClientID, n.ClientID))
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp
}

// matches is Kafka's matches(component, name) for an entity that has the
// component's type (has) with name.
func (m *match) matches(has bool, name string, strict bool) bool {
	switch {
	case m == nil:
		return !has || !strict
	case !has:
		return false
	case m.any:
		return true
	case m.name == nil:
		return name == coordinator.DefaultEntity
	}
	return name == *m.name
}

func describedEntity(typ, name string) kmsg.DescribeClientQuotasResponseEntryEntity {
	e := kmsg.NewDescribeClientQuotasResponseEntryEntity()
	e.Type = typ
	if name != coordinator.DefaultEntity {
		e.Name = &name
	}
	return e
}

// errInvalid is an entry's INVALID_REQUEST, with Kafka's message.
type errInvalid string

func (e errInvalid) Error() string { return string(e) }

// Alter answers an AlterClientQuotas request whose caller may alter the
// cluster's configs: each entry is validated and, unless validateOnly,
// applied on its own.
func (a *Admin) Alter(req *kmsg.AlterClientQuotasRequest) *kmsg.AlterClientQuotasResponse {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, entry := range req.Entries {
		out := AlterEntryResponse(entry)
		if err := a.alter(entry, req.ValidateOnly); err != nil {
			var inv errInvalid
			out.ErrorCode = kerr.UnknownServerError.Code
			if errors.As(err, &inv) {
				out.ErrorCode = kerr.InvalidRequest.Code
			} else {
				a.log.Error("altering client quotas", "err", err)
			}
			msg := err.Error()
			out.ErrorMessage = &msg
		}
		resp.Entries = append(resp.Entries, out)
	}
	return resp
}

// AlterEntryResponse is the response entry of entry, naming its entity,
// without error.
func AlterEntryResponse(entry kmsg.AlterClientQuotasRequestEntry) kmsg.AlterClientQuotasResponseEntry {
	out := kmsg.NewAlterClientQuotasResponseEntry()
	for _, e := range entry.Entity {
		oe := kmsg.NewAlterClientQuotasResponseEntryEntity()
		oe.Type, oe.Name = e.Type, e.Name
		out.Entity = append(out.Entity, oe)
	}
	return out
}

// entityPath reads an entity's components into its entity path and quota
// entity.
func entityPath(comps []kmsg.AlterClientQuotasRequestEntryEntity) (string, Entity, error) {
	if len(comps) == 0 {
		return "", Entity{}, errInvalid("Invalid empty client quota entity")
	}
	var user, client, ip *string
	for _, c := range comps {
		name := coordinator.DefaultEntity
		if c.Name != nil {
			name = *c.Name
		}
		switch c.Type {
		case EntityUser:
			user = &name
		case EntityClientID:
			client = &name
		case EntityIP:
			ip = &name
		default:
			return "", Entity{}, errInvalid("Unhandled client quota entity type: " + c.Type)
		}
		if c.Name != nil && *c.Name == "" {
			return "", Entity{}, errInvalid("Empty " + c.Type + " not supported")
		}
	}
	switch {
	case ip != nil && (user != nil || client != nil):
		return "", Entity{}, errInvalid("Invalid quota entity combination, IP entity should not be used with user/client ID entity.")
	case ip != nil:
		return "", Entity{}, errInvalid("IP quotas are not supported")
	case user != nil && client != nil:
		return coordinator.UserClientEntity(*user, *client), Entity{User: *user, ClientID: *client}, nil
	case user != nil:
		return coordinator.UserEntity(*user), Entity{User: *user}, nil
	}
	return coordinator.ClientEntity(*client), Entity{ClientID: *client}, nil
}

// alter validates and, unless validateOnly, applies one entry.
func (a *Admin) alter(entry kmsg.AlterClientQuotasRequestEntry, validateOnly bool) error {
	path, e, err := entityPath(entry.Entity)
	if err != nil {
		return err
	}
	values := make([]string, len(entry.Ops)) // each set op's stored value
	for i, op := range entry.Ops {
		if op.Remove {
			continue
		}
		t, ok := TypeOf(op.Key)
		if !ok {
			return errInvalid("Invalid configuration key " + op.Key)
		}
		v, err := storedValue(t, op.Value)
		if err != nil {
			return err
		}
		values[i] = v
	}
	if validateOnly {
		return nil
	}
	var after map[string]string
	err = a.store.AlterEntityConfigs(path, func(cur map[string]string) (map[string]string, error) {
		for i, op := range entry.Ops { // in order: a later op on a key wins
			if op.Remove {
				delete(cur, op.Key)
			} else {
				cur[op.Key] = values[i]
			}
		}
		after = cur
		return cur, nil
	})
	if err != nil {
		// The message is the one clients saw when this lived in broker/.
		return fmt.Errorf("broker: altering the quotas of %s: %w", path, err)
	}
	a.apply(e, after)
	return nil
}

// storedValue is how a value of type t is stored, as Kafka's
// alterClientQuotas writes it: LONG keys as integers (within 1e-6 of
// one), DOUBLE keys as Java's Double.toString does for ordinary numbers.
func storedValue(t Type, v float64) (string, error) {
	if t.Integral() {
		const epsilon = 1e-6
		n := math.Trunc(v + epsilon)
		if math.Abs(n-v) > epsilon || math.IsNaN(v) || n > math.MaxInt64 || n < math.MinInt64 {
			return "", errInvalid("Configuration " + t.Key() + " must be a LONG value")
		}
		return strconv.FormatInt(int64(n), 10), nil
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if v == math.Trunc(v) && !math.IsInf(v, 0) && math.Abs(v) < 1e7 {
		s += ".0"
	}
	return s, nil
}
