package scram

// The administration of the users' SCRAM credentials, as Kafka's
// ZkAdminManager does it: DescribeUserScramCredentials (key 50) and
// AlterUserScramCredentials (key 51), on the credentials kept in the
// users' entity configs (the keys "SCRAM-SHA-256" and "SCRAM-SHA-512"),
// read and written through a Store. The broker's handlers decode the
// request, authorize it and encode what Admin answers.
//
// Describe:
//   - No users (null or empty): every user with a SCRAM credential, in
//     the Store's order.
//   - Named users, in request order, once each: an empty name gets
//     RESOURCE_NOT_FOUND, a name given twice DUPLICATE_RESOURCE, a user
//     without a credential RESOURCE_NOT_FOUND.
//   - Each credential answers its mechanism and iterations, never the
//     salt or keys.
//
// Alter:
//   - One result per user named, in the order of first mention (deletions
//     first, then upsertions); a user's deletions and upsertions apply
//     together or not at all, written with one AlterUserConfigs to the
//     SCRAM keys alone (quotas share the entity).
//   - Errors, per user: an empty name UNACCEPTABLE_CREDENTIAL; a mechanism
//     other than 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512)
//     UNSUPPORTED_SASL_MECHANISM; iterations outside [MinIterations,
//     MaxIterations], or an empty salt or salted password,
//     UNACCEPTABLE_CREDENTIAL; the same user and mechanism twice in the
//     request DUPLICATE_RESOURCE; deleting a credential that does not
//     exist RESOURCE_NOT_FOUND.
//   - The upserted credential is derived from the salted password the
//     client sends (stored and server keys); the password never travels.
//   - The user's entry in the Cache is dropped after each write attempt.

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Store reads and writes the users' entity configs: ZooKeeper's
// /config/users/<user> in a cluster, the metadata file on a single node.
type Store interface {
	// Users lists the users that have an entity (SCRAM credentials or
	// quotas), the default user excepted, in the order Describe answers
	// them (the broker's: sorted by sanitized entity path).
	Users() ([]string, error)
	// UserConfigs reads user's entity configs, by key; none is an empty
	// map.
	UserConfigs(user string) (map[string]string, error)
	// AlterUserConfigs replaces user's entity configs with what alter
	// makes of the current ones (nil or empty if none), atomically; an
	// error from alter is returned and nothing is written.
	AlterUserConfigs(user string, alter func(cur map[string]string) (map[string]string, error)) error
}

// Options are an Admin's collaborators.
type Options struct {
	Store Store
	// Cache is the broker's cache of credentials, over the same Store;
	// a user's entry is dropped once its credentials are altered.
	Cache  *Cache
	Logger *slog.Logger
}

// Admin serves the SCRAM credentials' administration requests.
type Admin struct {
	store Store
	cache *Cache
	log   *slog.Logger
}

// NewAdmin returns an Admin over opts' collaborators.
func NewAdmin(opts Options) *Admin {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Admin{store: opts.Store, cache: opts.Cache, log: log}
}

// Describe answers an authorized DescribeUserScramCredentials request.
func (a *Admin) Describe(req *kmsg.DescribeUserSCRAMCredentialsRequest) *kmsg.DescribeUserSCRAMCredentialsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if len(req.Users) == 0 {
		users, err := a.store.Users()
		if err != nil {
			msg := "Error retrieving all users: " + err.Error()
			resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, &msg
			return resp
		}
		for _, user := range users {
			if res, ok := a.describe(user); ok {
				resp.Results = append(resp.Results, res)
			}
		}
		return resp
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	for _, u := range req.Users {
		if count[u.Name] < 0 {
			continue // answered
		}
		n := count[u.Name]
		count[u.Name] = -1
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u.Name
		var msg string
		switch {
		case u.Name == "":
			res.ErrorCode, msg = kerr.ResourceNotFound.Code, "Cannot describe SCRAM credentials for empty username"
		case n > 1:
			res.ErrorCode, msg = kerr.DuplicateResource.Code, "Cannot describe SCRAM credentials for the same user twice in a single request: "+u.Name
		default:
			if found, ok := a.describe(u.Name); ok {
				res = found
			} else {
				res.ErrorCode, msg = kerr.ResourceNotFound.Code, "Attempt to describe a user credential that does not exist: "+u.Name
			}
		}
		if res.ErrorCode != 0 {
			res.ErrorMessage = &msg
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

// describe is user's result if it has any SCRAM credential, or an error
// reading them.
func (a *Admin) describe(user string) (kmsg.DescribeUserSCRAMCredentialsResponseResult, bool) {
	res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
	res.User = user
	cfgs, err := a.store.UserConfigs(user)
	if err != nil {
		msg := "Error retrieving credentials: " + err.Error()
		res.ErrorCode, res.ErrorMessage = kerr.UnknownServerError.Code, &msg
		return res, true
	}
	for _, m := range Mechanisms {
		v, ok := cfgs[m.Name()]
		if !ok {
			continue
		}
		cred, err := m.ParseCredential(v)
		if err != nil {
			msg := "Error retrieving credentials: " + err.Error()
			res.ErrorCode, res.ErrorMessage, res.CredentialInfos = kerr.UnknownServerError.Code, &msg, nil
			return res, true
		}
		info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		info.Mechanism, info.Iterations = m.Type(), int32(cred.Iterations)
		res.CredentialInfos = append(res.CredentialInfos, info)
	}
	return res, len(res.CredentialInfos) > 0
}

// alterOp is one deletion or upsertion.
type alterOp struct {
	mech   int8
	delete bool
	iter   int32
	salt   []byte
	salted []byte
}

// errNoCredential: a deletion of a credential that is not there.
var errNoCredential = errors.New("scram: no such credential")

// Alter answers an AlterUserScramCredentials request; authorized is
// whether the client may alter the cluster: if not, every user named gets
// CLUSTER_AUTHORIZATION_FAILED and nothing is written.
func (a *Admin) Alter(req *kmsg.AlterUserSCRAMCredentialsRequest, authorized bool) *kmsg.AlterUserSCRAMCredentialsResponse {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var order []string
	ops := map[string][]alterOp{}
	add := func(user string, op alterOp) {
		if _, ok := ops[user]; !ok {
			order = append(order, user)
		}
		ops[user] = append(ops[user], op)
	}
	for _, d := range req.Deletions {
		add(d.Name, alterOp{mech: d.Mechanism, delete: true})
	}
	for _, u := range req.Upsertions {
		add(u.Name, alterOp{mech: u.Mechanism, iter: u.Iterations, salt: u.Salt, salted: u.SaltedPassword})
	}
	for _, user := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		code, msg := kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Message
		if authorized {
			code, msg = a.alter(user, ops[user])
		}
		if code != 0 {
			res.ErrorCode, res.ErrorMessage = code, &msg
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

// alter validates and applies one user's operations.
func (a *Admin) alter(user string, ops []alterOp) (int16, string) {
	if user == "" {
		return kerr.UnacceptableCredential.Code, "Username must not be empty"
	}
	seen := map[int8]bool{}
	for _, op := range ops {
		m, ok := ByType(op.mech)
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
		case op.iter < MinIterations:
			return kerr.UnacceptableCredential.Code, fmt.Sprintf("Too few iterations: %d (%s needs at least %d)", op.iter, m.Name(), MinIterations)
		case op.iter > MaxIterations:
			return kerr.UnacceptableCredential.Code, fmt.Sprintf("Too many iterations: %d (%s allows at most %d)", op.iter, m.Name(), MaxIterations)
		case len(op.salt) == 0 || len(op.salted) == 0:
			return kerr.UnacceptableCredential.Code, "Salt and salted password must not be empty"
		}
	}
	err := a.store.AlterUserConfigs(user, func(cur map[string]string) (map[string]string, error) {
		if cur == nil {
			cur = map[string]string{}
		}
		for _, op := range ops {
			m, _ := ByType(op.mech)
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
	if a.cache != nil {
		a.cache.Forget(user)
	}
	switch {
	case errors.Is(err, errNoCredential):
		return kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"
	case err != nil:
		a.log.Warn("altering SCRAM credentials", "user", user, "err", err)
		return kerr.UnknownServerError.Code, err.Error()
	}
	return 0, ""
}
