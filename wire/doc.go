// Package wire is sluice's side of the Kafka wire protocol: request framing,
// request headers, response framing, and a Fetch response writer that streams
// record bytes from any io.WriterTo (so from the storage engine's views with
// sendfile), and the client's side for the broker's own requests to other
// brokers (client.go: AppendRequest, ParseResponse). Message bodies are
// franz-go's kmsg types. wire imports only kmsg and the standard library.
//
// Every request and response is a frame: a big-endian int32 size, then that
// many bytes.
//
//	request:   size int32 | api_key int16 | api_version int16 | correlation_id int32 |
//	           client_id nullable string (int16 length, -1 = null) |
//	           [tagged fields, uvarint count + fields: header v2, flexible versions] | body
//	response:  size int32 | correlation_id int32 |
//	           [tagged fields: header v1, flexible versions except ApiVersions] | body
//
// ApiVersions responses always use response header v0, so a client that
// does not know the broker's versions can read the answer.
package wire
