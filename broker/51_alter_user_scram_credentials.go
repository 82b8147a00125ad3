package broker

// AlterUserScramCredentials (key 51), version 0.
//
// Behavior (Kafka's ZkAdminManager):
//   - One result per user named, in the order of first mention; a user's
//     deletions and upsertions apply together or not at all, written with
//     AlterEntityConfigs to the SCRAM keys of users/<user> alone (quotas
//     share the entity).
//   - Errors, per user: an empty name UNACCEPTABLE_CREDENTIAL; a mechanism
//     other than 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512)
//     UNSUPPORTED_SASL_MECHANISM; iterations outside [4096, 16384], or an
//     empty salt or salted password, UNACCEPTABLE_CREDENTIAL; the same
//     user and mechanism twice in the request DUPLICATE_RESOURCE; deleting
//     a credential that does not exist RESOURCE_NOT_FOUND.
//   - The upserted credential is derived from the salted password the
//     client sends (stored and server keys); the password never travels.
//   - Alter on the cluster is needed, else CLUSTER_AUTHORIZATION_FAILED
//     for every user.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/security/scram"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(51, 0, 0, handleAlterUserScramCredentials) }

// scramOp is one deletion or upsertion.
type scramOp struct {
	mech   int8
	delete bool
	iter   int32
	salt   []byte
	salted []byte
}

// errNoCredential: a deletion of a credential that is not there.
var errNoCredential = errors.New("broker: no such credential")

func handleAlterUserScramCredentials(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var order []string
	ops := map[string][]scramOp{}
	add := func(user string, op scramOp) {
		if _, ok := ops[user]; !ok {
			order = append(order, user)
		}
		ops[user] = append(ops[user], op)
	}
	for _, d := range req.Deletions {
		add(d.Name, scramOp{mech: d.Mechanism, delete: true})
	}
	for _, u := range req.Upsertions {
		add(u.Name, scramOp{mech: u.Mechanism, iter: u.Iterations, salt: u.Salt, salted: u.SaltedPassword})
	}
	allowed := c.authorizedCluster(acl.OpAlter)
	for _, user := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		code, msg := kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Message
		if allowed {
			code, msg = c.b.alterSCRAM(user, ops[user])
		}
		if code != 0 {
			res.ErrorCode, res.ErrorMessage = code, &msg
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// alterSCRAM validates and applies one user's operations.
func (b *Broker) alterSCRAM(user string, ops []scramOp) (int16, string) {
	if user == "" {
		return kerr.UnacceptableCredential.Code, "Username must not be empty"
	}
	seen := map[int8]bool{}
	for _, op := range ops {
		m, ok := scram.ByType(op.mech)
		if !ok {
			return kerr.UnsupportedSaslMechanism.Code, fmt.Sprintf("Unknown SCRAM mechanism %d", op.mech)
		}
		if seen[op.mech] {
			return kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"
		}
		seen[op.mech] = true
		if op.delete {
			continue
		}
		switch {
		case op.iter < scram.MinIterations:
			return kerr.UnacceptableCredential.Code, fmt.Sprintf("Too few iterations: %d (%s needs at least %d)", op.iter, m.Name(), scram.MinIterations)
		case op.iter > scram.MaxIterations:
			return kerr.UnacceptableCredential.Code, fmt.Sprintf("Too many iterations: %d (%s allows at most %d)", op.iter, m.Name(), scram.MaxIterations)
		case len(op.salt) == 0 || len(op.salted) == 0:
			return kerr.UnacceptableCredential.Code, "Salt and salted password must not be empty"
		}
	}
	err := b.coord.AlterEntityConfigs(coordinator.UserEntity(user), func(cur map[string]string) (map[string]string, error) {
		if cur == nil {
			cur = map[string]string{}
		}
		for _, op := range ops {
			m, _ := scram.ByType(op.mech)
			if op.delete {
				if _, ok := cur[m.Name()]; !ok {
					return nil, fmt.Errorf("%w: %s", errNoCredential, m.Name())
				}
				delete(cur, m.Name())
				continue
			}
			cur[m.Name()] = m.FromSaltedPassword(op.salted, op.salt, int(op.iter)).String()
		}
		return cur, nil
	})
	b.forgetSCRAM(user)
	switch {
	case errors.Is(err, errNoCredential):
		return kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"
	case err != nil:
		b.log.Warn("altering SCRAM credentials", "user", user, "err", err)
		return kerr.UnknownServerError.Code, err.Error()
	}
	return 0, ""
}
