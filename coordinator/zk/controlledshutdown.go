package zk

// A broker's ControlledShutdown (key 7) handed to the controller loop, as
// AlterPartition is: the core decides (controller/shutdown.go), the loop
// answers once the core does.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/coordinator/controller"
)

// shutdownCall is a ControlledShutdown handed to the loop, and where its
// answer goes (capacity 1).
type shutdownCall struct {
	req   *kmsg.ControlledShutdownRequest
	reply chan *kmsg.ControlledShutdownResponse
}

// ControlledShutdown hands a broker's ControlledShutdown request to the
// controller and returns its response once the partitions have moved, or
// ctx's error when ctx ends first. A broker that is not the controller,
// or stops being it meanwhile, answers NOT_CONTROLLER.
func (l *ControllerLoop) ControlledShutdown(ctx context.Context, req *kmsg.ControlledShutdownRequest) (*kmsg.ControlledShutdownResponse, error) {
	call := shutdownCall{req: req, reply: make(chan *kmsg.ControlledShutdownResponse, 1)}
	return ask(l, ctx, l.shutdowns, call, call.reply, func() *kmsg.ControlledShutdownResponse { return shutdownNotController(req) })
}

func shutdownNotController(req *kmsg.ControlledShutdownRequest) *kmsg.ControlledShutdownResponse {
	return &kmsg.ControlledShutdownResponse{Version: req.Version, ErrorCode: kerr.NotController.Code}
}

// shutdown Steps a ControlledShutdown into the core.
func (t *term) shutdown(sd shutdownCall) {
	t.alterID++
	t.shutdownReplies[t.alterID] = sd
	t.l.log.Info("controlled shutdown asked", "epoch", t.e.Epoch, "shutting_down", sd.req.BrokerID)
	t.core.Step(controller.ControlledShutdown{ID: t.alterID, Request: sd.req})
}

// answerShutdowns sends the core's answers back to their callers.
func (t *term) answerShutdowns(as []controller.ShutdownAnswer) {
	for _, a := range as {
		if call, ok := t.shutdownReplies[a.ID]; ok {
			delete(t.shutdownReplies, a.ID)
			t.l.log.Info("controlled shutdown answered", "epoch", t.e.Epoch, "shutting_down", call.req.BrokerID,
				"error", a.Response.ErrorCode, "partitions_remaining", len(a.Response.PartitionsRemaining))
			call.reply <- a.Response
		}
	}
}

// endShutdowns answers the requests the term still holds NOT_CONTROLLER.
func (t *term) endShutdowns() {
	for id, call := range t.shutdownReplies {
		delete(t.shutdownReplies, id)
		call.reply <- shutdownNotController(call.req)
	}
}
