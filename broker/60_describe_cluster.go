package broker

// DescribeCluster (key 60), versions 0-1.
//
// Behavior:
//   - Answers the cluster ID, the controller and the live brokers, as
//     Metadata does, and the cluster's authorized operations when asked
//     (authorizedops.go: all of them, as Kafka without an authorizer).
//   - v1: an endpoint type other than brokers (1) gets
//     UNSUPPORTED_ENDPOINT_TYPE: sluice has no separate controller
//     endpoints.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator"
	"github.com/sluice-io/sluice/security/acl"
	"github.com/sluice-io/sluice/wire"
)

func init() { register(60, 0, 1, handleDescribeCluster) }

func handleDescribeCluster(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = 1
	resp.ClusterAuthorizedOperations = math.MinInt32
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = c.authorizedOps(acl.ResourceCluster, acl.ClusterName)
	}
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.EndpointType = req.EndpointType
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		msg := "sluice brokers serve the brokers endpoint type (1) only"
		resp.ErrorMessage = &msg
		return resp, nil
	}
	resp.ClusterID = c.b.coord.ClusterID()
	var brokers []coordinator.Broker
	resp.ControllerID, brokers = c.b.plane.dir.Brokers(c.Listener().Name)
	for _, br := range brokers {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack = br.ID, br.Host, br.Port, br.Rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp, nil
}
