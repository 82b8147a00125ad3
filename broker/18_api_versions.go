package broker

// ApiVersions (key 18), versions 0-4.
//
// Behavior:
//   - Lists exactly the keys and versions the handlers serve.
//   - A request at a version above 4 is answered with version 0 of the
//     response (the only one every client reads) carrying
//     UNSUPPORTED_VERSION and the supported list, as Kafka 2.4+ does.
//   - v3+: the client software name and version must match Kafka's pattern,
//     else INVALID_REQUEST.
//
// Version notes: the response header is always v0.

import (
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/wire"
)

func init() { register(18, 0, 4, handleApiVersions) }

var softwarePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func apiKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]int16, 0, len(apis))
	for k := range apis {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(keys))
	for _, k := range keys {
		a := kmsg.NewApiVersionsResponseApiKey()
		a.ApiKey, a.MinVersion, a.MaxVersion = k, apis[k].min, apis[k].max
		out = append(out, a)
	}
	return out
}

func unsupportedApiVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = apiKeys()
	return resp
}

func handleApiVersions(c *conn, h wire.Header, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!softwarePattern.MatchString(req.ClientSoftwareName) || !softwarePattern.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	resp.ApiKeys = apiKeys()
	return resp, nil
}
