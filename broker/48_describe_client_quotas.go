package broker

// DescribeClientQuotas (key 48), versions 0-1.
//
// Behavior, as Kafka 3.9's ZkAdminManager.describeClientQuotas:
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
//   - Entities are read from the entity configs (coordinator.Entities);
//     the order is theirs (users first, by entity path), Kafka's is a
//     map's. sluice keeps no ip quotas: an ip filter describes nothing.

import (
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/security/quota"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(48, 0, 1, handleDescribeClientQuotas) }

// quotaMatch is one filter component: nil for none; any, or name (nil: the
// default entity).
type quotaMatch struct {
	any  bool
	name *string
}

func handleDescribeClientQuotas(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(code int16, msg string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage, resp.Entries = code, &msg, nil
		return resp, nil
	}
	if !c.authorizedCluster(acl.OpDescribeConfigs) {
		return fail(kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Message)
	}
	var user, client, ip *quotaMatch
	for _, comp := range req.Components {
		m := &quotaMatch{}
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
		var slot **quotaMatch
		switch comp.EntityType {
		case quotaEntityUser:
			slot = &user
		case quotaEntityClientID:
			slot = &client
		case quotaEntityIP:
			slot = &ip
		case "":
			return fail(kerr.InvalidRequest.Code, "Unexpected empty filter component entity type")
		default:
			return fail(kerr.UnsupportedVersion.Code, "Custom entity type '"+comp.EntityType+"' not supported")
		}
		if *slot != nil {
			what := comp.EntityType
			if what == quotaEntityClientID {
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
		return resp, nil
	}
	var paths []string
	for _, typ := range []string{"users", "clients"} {
		ps, err := c.b.coord.Entities(typ)
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
		cfgs, err := c.b.coord.EntityConfigs(p)
		if err != nil {
			return fail(kerr.UnknownServerError.Code, err.Error())
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, k := range quota.Keys {
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
			entry.Entity = append(entry.Entity, describedEntity(quotaEntityUser, n.User))
		}
		if n.HasClientID {
			entry.Entity = append(entry.Entity, describedEntity(quotaEntityClientID, n.ClientID))
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp, nil
}

// matches is Kafka's matches(component, name) for an entity that has the
// component's type (has) with name.
func (m *quotaMatch) matches(has bool, name string, strict bool) bool {
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
