package broker

// AlterClientQuotas (key 49), versions 0-1.
//
// Behavior, as Kafka 3.9's ZkAdminManager.alterClientQuotas:
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
//   - The entity's configs are altered in place (AlterEntityConfigs): the
//     keys not touched, SCRAM credentials among them, stay. The change is
//     applied here at once, and every other broker applies it from its
//     notification (clientquotas.go).
//   - ValidateOnly checks everything and writes nothing.
//   - Deliberate difference: "ip" entities (connection_creation_rate) are
//     not served: INVALID_REQUEST ("IP quotas are not supported"), also
//     mixed with a user or client id (Kafka's message then).

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/security/quota"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(49, 0, 1, handleAlterClientQuotas) }

// Kafka's entity types (ClientQuotaEntity).
const (
	quotaEntityUser     = "user"
	quotaEntityClientID = "client-id"
	quotaEntityIP       = "ip"
)

// errInvalidQuota is an entry's INVALID_REQUEST, with Kafka's message.
type errInvalidQuota string

func (e errInvalidQuota) Error() string { return string(e) }

func handleAlterClientQuotas(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	allowed := c.authorizedCluster(acl.OpAlterConfigs)
	for _, entry := range req.Entries {
		out := kmsg.NewAlterClientQuotasResponseEntry()
		for _, e := range entry.Entity {
			oe := kmsg.NewAlterClientQuotasResponseEntryEntity()
			oe.Type, oe.Name = e.Type, e.Name
			out.Entity = append(out.Entity, oe)
		}
		if !allowed {
			msg := kerr.ClusterAuthorizationFailed.Message
			out.ErrorCode, out.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		} else if err := c.b.alterClientQuota(entry, req.ValidateOnly); err != nil {
			var inv errInvalidQuota
			out.ErrorCode = kerr.UnknownServerError.Code
			if errors.As(err, &inv) {
				out.ErrorCode = kerr.InvalidRequest.Code
			} else {
				c.b.log.Error("altering client quotas", "err", err)
			}
			msg := err.Error()
			out.ErrorMessage = &msg
		}
		resp.Entries = append(resp.Entries, out)
	}
	return resp, nil
}

// quotaEntityPath reads an entity's components into its entity path and
// quota entity.
func quotaEntityPath(comps []kmsg.AlterClientQuotasRequestEntryEntity) (string, quota.Entity, error) {
	if len(comps) == 0 {
		return "", quota.Entity{}, errInvalidQuota("Invalid empty client quota entity")
	}
	var user, client, ip *string
	for _, c := range comps {
		name := coordinator.DefaultEntity
		if c.Name != nil {
			name = *c.Name
		}
		switch c.Type {
		case quotaEntityUser:
			user = &name
		case quotaEntityClientID:
			client = &name
		case quotaEntityIP:
			ip = &name
		default:
			return "", quota.Entity{}, errInvalidQuota("Unhandled client quota entity type: " + c.Type)
		}
		if c.Name != nil && *c.Name == "" {
			return "", quota.Entity{}, errInvalidQuota("Empty " + c.Type + " not supported")
		}
	}
	switch {
	case ip != nil && (user != nil || client != nil):
		return "", quota.Entity{}, errInvalidQuota("Invalid quota entity combination, IP entity should not be used with user/client ID entity.")
	case ip != nil:
		return "", quota.Entity{}, errInvalidQuota("IP quotas are not supported")
	case user != nil && client != nil:
		return coordinator.UserClientEntity(*user, *client), quota.Entity{User: *user, ClientID: *client}, nil
	case user != nil:
		return coordinator.UserEntity(*user), quota.Entity{User: *user}, nil
	}
	return coordinator.ClientEntity(*client), quota.Entity{ClientID: *client}, nil
}

// alterClientQuota validates and, unless validateOnly, applies one entry.
func (b *Broker) alterClientQuota(entry kmsg.AlterClientQuotasRequestEntry, validateOnly bool) error {
	path, e, err := quotaEntityPath(entry.Entity)
	if err != nil {
		return err
	}
	values := make([]string, len(entry.Ops)) // each set op's stored value
	for i, op := range entry.Ops {
		if op.Remove {
			continue
		}
		t, ok := quota.TypeOf(op.Key)
		if !ok {
			return errInvalidQuota("Invalid configuration key " + op.Key)
		}
		v, err := quotaValue(t, op.Value)
		if err != nil {
			return err
		}
		values[i] = v
	}
	if validateOnly {
		return nil
	}
	var after map[string]string
	err = b.coord.AlterEntityConfigs(path, func(cur map[string]string) (map[string]string, error) {
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
		return fmt.Errorf("broker: altering the quotas of %s: %w", path, err)
	}
	b.applyQuotaEntity(e, after)
	return nil
}

// quotaValue is how a value of type t is stored, as Kafka's
// alterClientQuotas writes it: LONG keys as integers (within 1e-6 of
// one), DOUBLE keys as Java's Double.toString does for ordinary numbers.
func quotaValue(t quota.Type, v float64) (string, error) {
	if t.Integral() {
		const epsilon = 1e-6
		n := math.Trunc(v + epsilon)
		if math.Abs(n-v) > epsilon || math.IsNaN(v) || n > math.MaxInt64 || n < math.MinInt64 {
			return "", errInvalidQuota("Configuration " + t.Key() + " must be a LONG value")
		}
		return strconv.FormatInt(int64(n), 10), nil
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if v == math.Trunc(v) && !math.IsInf(v, 0) && math.Abs(v) < 1e7 {
		s += ".0"
	}
	return s, nil
}
