package group

import "github.com/twmb/franz-go/pkg/kerr"

// Kafka error codes the coordinator answers.
var (
	errNotCoordinator          = kerr.NotCoordinator.Code
	errCoordinatorNotAvailable = kerr.CoordinatorNotAvailable.Code
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
