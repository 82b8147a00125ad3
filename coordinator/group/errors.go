package group

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

var (
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("group: coordinator closed")
	// ErrNotLeader is what a Store's Append wraps when this broker no
	// longer leads the partition: the request is answered NOT_COORDINATOR,
	// as Kafka maps NOT_LEADER_OR_FOLLOWER on __consumer_offsets.
	ErrNotLeader = errors.New("group: not the leader of the __consumer_offsets partition")
	// ErrNotOwned is returned by WaitLoaded for a partition the
	// coordinator does not own and is not loading.
	ErrNotOwned = errors.New("group: __consumer_offsets partition not owned")

	// errLoadCancelled stops the read of a load that a newer Load or
	// Unload, or Close, made stale.
	errLoadCancelled = errors.New("group: load cancelled")
)

// Kafka error codes the coordinator answers.
var (
	errNotCoordinator          = kerr.NotCoordinator.Code
	errCoordinatorNotAvailable = kerr.CoordinatorNotAvailable.Code
	errLoadInProgress          = kerr.CoordinatorLoadInProgress.Code
	errInvalidGroupID          = kerr.InvalidGroupID.Code
	errUnknownMemberID         = kerr.UnknownMemberID.Code
	errMemberIDRequired        = kerr.MemberIDRequired.Code
	errIllegalGeneration       = kerr.IllegalGeneration.Code
	errRebalanceInProgress     = kerr.RebalanceInProgress.Code
	errInvalidSessionTimeout   = kerr.InvalidSessionTimeout.Code
	errInconsistentProtocol    = kerr.InconsistentGroupProtocol.Code
	errFencedInstanceID        = kerr.FencedInstanceID.Code
	errGroupMaxSizeReached     = kerr.GroupMaxSizeReached.Code
	errNonEmptyGroup           = kerr.NonEmptyGroup.Code
	errGroupIDNotFound         = kerr.GroupIDNotFound.Code
	errUnknownTopicOrPartition = kerr.UnknownTopicOrPartition.Code
	errOffsetMetadataTooLarge  = kerr.OffsetMetadataTooLarge.Code
	errGroupSubscribedToTopic  = kerr.GroupSubscribedToTopic.Code
)

// appendError is the code a failed Store.Append answers, as Kafka's
// GroupMetadataManager maps the offsets topic's append errors:
// NOT_LEADER_OR_FOLLOWER becomes NOT_COORDINATOR (the client finds the new
// coordinator), anything else COORDINATOR_NOT_AVAILABLE.
func appendError(err error) int16 {
	if errors.Is(err, ErrNotLeader) {
		return errNotCoordinator
	}
	return errCoordinatorNotAvailable
}
