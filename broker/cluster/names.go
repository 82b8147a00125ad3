package cluster

import (
	"fmt"
	"strings"
)

// maxTopicName is Kafka's limit on topic name length.
const maxTopicName = 249

// ValidateTopicName applies Kafka's topic-name rules.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("topic name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("topic name cannot be %q", name)
	case len(name) > maxTopicName:
		return fmt.Errorf("topic name is %d characters, the limit is %d", len(name), maxTopicName)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("topic name %q has a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// IsInternal reports Kafka's internal topics.
func IsInternal(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state" || strings.HasPrefix(name, "__cluster_metadata")
}
