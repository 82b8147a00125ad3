package broker

// DescribeUserScramCredentials (key 50), version 0.
//
// Behavior (Kafka's ZkAdminManager):
//   - No users (null or empty): every user with a SCRAM credential,
//     sorted by name.
//   - Named users, in request order, once each: an empty name gets
//     RESOURCE_NOT_FOUND, a name given twice DUPLICATE_RESOURCE, a user
//     without a credential RESOURCE_NOT_FOUND.
//   - Each credential answers its mechanism and iterations, never the
//     salt or keys.
//   - Describe on the cluster is needed, else CLUSTER_AUTHORIZATION_FAILED
//     for the whole response.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/security/scram"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(50, 0, 0, handleDescribeUserScramCredentials) }

func handleDescribeUserScramCredentials(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	fail := func(code int16, msg string) {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
	}
	if !c.authorizedCluster(acl.OpDescribe) {
		fail(kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Message)
		return resp, nil
	}
	if len(req.Users) == 0 {
		paths, err := c.b.coord.Entities("users")
		if err != nil {
			fail(kerr.UnknownServerError.Code, "Error retrieving all users: "+err.Error())
			return resp, nil
		}
		for _, p := range paths {
			e, err := coordinator.ParseEntityPath(p)
			if err != nil || !e.HasUser || e.HasClientID || e.User == coordinator.DefaultEntity {
				continue
			}
			if res, ok := c.b.describeSCRAM(e.User); ok {
				resp.Results = append(resp.Results, res)
			}
		}
		return resp, nil
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
			if found, ok := c.b.describeSCRAM(u.Name); ok {
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
	return resp, nil
}

// describeSCRAM is user's result if it has any SCRAM credential.
func (b *Broker) describeSCRAM(user string) (kmsg.DescribeUserSCRAMCredentialsResponseResult, bool) {
	res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
	res.User = user
	cfgs, err := b.coord.EntityConfigs(coordinator.UserEntity(user))
	if err != nil {
		msg := "Error retrieving credentials: " + err.Error()
		res.ErrorCode, res.ErrorMessage = kerr.UnknownServerError.Code, &msg
		return res, true
	}
	for _, m := range scram.Mechanisms {
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
