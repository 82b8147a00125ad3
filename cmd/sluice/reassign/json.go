package reassign

// The JSON files of sluice topic reassign, in kafka-reassign-partitions.sh's
// formats, so that plans and tools made for Kafka carry over.
//
// A reassignment (--reassignment-json-file, and what --generate and
// --execute print), compact, partitions sorted by topic and partition:
//
//	{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}
//
// "version" is 1 (or absent); "log_dirs", optional, has one entry per
// replica, and sluice takes only "any" (it does not move replicas between
// the log directories of one broker).
//
// The topics to move (--topics-to-move-json-file):
//
//	{"version":1,"topics":[{"topic":"orders"},{"topic":"payments"}]}

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// anyLogDir is Kafka's log_dirs entry for "wherever the broker likes".
const anyLogDir = "any"

type reassignmentJSON struct {
	Version    *int                `json:"version"`
	Partitions *[]reassignmentPart `json:"partitions"`
}

type reassignmentPart struct {
	Topic     *string  `json:"topic"`
	Partition *int32   `json:"partition"`
	Replicas  *[]int32 `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

type topicsJSON struct {
	Version *int `json:"version"`
	Topics  *[]struct {
		Topic *string `json:"topic"`
	} `json:"topics"`
}

// ParseAssignments parses a reassignment file's contents (name is for
// errors). The partitions come back sorted; a partition given twice is an
// error. Replica lists are not checked here: the controller checks them
// and answers per partition.
func ParseAssignments(name string, data []byte) ([]Assignment, error) {
	var f reassignmentJSON
	if err := decodeJSON(name, data, &f); err != nil {
		return nil, err
	}
	if err := checkVersion(name, f.Version); err != nil {
		return nil, err
	}
	if f.Partitions == nil {
		return nil, fmt.Errorf("%s: no \"partitions\" field", name)
	}
	if len(*f.Partitions) == 0 {
		return nil, fmt.Errorf("%s: the partition reassignment list is empty", name)
	}
	out := make([]Assignment, 0, len(*f.Partitions))
	for i, p := range *f.Partitions {
		where := fmt.Sprintf("%s: partitions[%d]", name, i)
		switch {
		case p.Topic == nil || *p.Topic == "":
			return nil, fmt.Errorf("%s: no \"topic\"", where)
		case p.Partition == nil:
			return nil, fmt.Errorf("%s: no \"partition\"", where)
		case p.Replicas == nil:
			return nil, fmt.Errorf("%s: no \"replicas\"", where)
		case p.LogDirs != nil && len(p.LogDirs) != len(*p.Replicas):
			return nil, fmt.Errorf("%s: %d log_dirs for %d replicas", where, len(p.LogDirs), len(*p.Replicas))
		}
		for _, d := range p.LogDirs {
			if d != anyLogDir {
				return nil, fmt.Errorf("%s: log_dirs %q: sluice places replicas in log directories itself, give \"any\"", where, d)
			}
		}
		out = append(out, Assignment{Topic: *p.Topic, Partition: *p.Partition, Replicas: *p.Replicas})
	}
	sortAssignments(out)
	var dups []string
	for i := 1; i < len(out); i++ {
		if out[i].Topic == out[i-1].Topic && out[i].Partition == out[i-1].Partition {
			dups = append(dups, PartitionName(out[i].Topic, out[i].Partition))
		}
	}
	if len(dups) > 0 {
		return nil, fmt.Errorf("%s: partitions given more than once: %s", name, strings.Join(slices.Compact(dups), ","))
	}
	return out, nil
}

// ParseTopics parses a topics-to-move file's contents: the topic
// names, sorted, each once.
func ParseTopics(name string, data []byte) ([]string, error) {
	var f topicsJSON
	if err := decodeJSON(name, data, &f); err != nil {
		return nil, err
	}
	if err := checkVersion(name, f.Version); err != nil {
		return nil, err
	}
	if f.Topics == nil || len(*f.Topics) == 0 {
		return nil, fmt.Errorf("%s: no topics in \"topics\"", name)
	}
	var out []string
	for i, t := range *f.Topics {
		if t.Topic == nil || *t.Topic == "" {
			return nil, fmt.Errorf("%s: topics[%d]: no \"topic\"", name, i)
		}
		if slices.Contains(out, *t.Topic) {
			return nil, fmt.Errorf("%s: topic %s listed more than once", name, *t.Topic)
		}
		out = append(out, *t.Topic)
	}
	slices.Sort(out)
	return out, nil
}

// ParseBrokerList parses --broker-list: comma-separated broker ids, each
// once.
func ParseBrokerList(s string) ([]int32, error) {
	var out []int32
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		id, err := strconv.ParseInt(f, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("--broker-list %q: %q is not a broker id", s, f)
		}
		if slices.Contains(out, int32(id)) {
			return nil, fmt.Errorf("--broker-list %q: broker %d listed more than once", s, id)
		}
		out = append(out, int32(id))
	}
	return out, nil
}

// Format writes parts as a reassignment file's JSON, sorted.
func Format(parts []Assignment) string {
	parts = slices.Clone(parts)
	sortAssignments(parts)
	ps := make([]reassignmentPart, len(parts))
	for i, p := range parts {
		dirs := make([]string, len(p.Replicas))
		for j := range dirs {
			dirs[j] = anyLogDir
		}
		replicas := p.Replicas
		if replicas == nil {
			replicas = []int32{}
		}
		ps[i] = reassignmentPart{Topic: &p.Topic, Partition: &p.Partition, Replicas: &replicas, LogDirs: dirs}
	}
	version := 1
	out, err := json.Marshal(reassignmentJSON{Version: &version, Partitions: &ps})
	if err != nil {
		panic(err) // strings and integers always marshal
	}
	return string(out)
}

// sortAssignments sorts parts by topic, then partition.
func sortAssignments(parts []Assignment) {
	slices.SortFunc(parts, func(a, b Assignment) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}

// PartitionName is Kafka's name of a partition: topic-partition.
func PartitionName(topic string, partition int32) string {
	return topic + "-" + strconv.Itoa(int(partition))
}

func checkVersion(name string, v *int) error {
	if v != nil && *v != 1 {
		return fmt.Errorf("%s: version %d not supported (want 1)", name, *v)
	}
	return nil
}

// decodeJSON decodes one JSON object; an error names the file and, for
// malformed JSON or a value of the wrong type, the line and column of the
// byte where the decoder stopped.
func decodeJSON(name string, data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra == nil {
			err = fmt.Errorf("more after the JSON object at offset %d", dec.InputOffset())
		}
	}
	if err == nil {
		return nil
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("%s:%s: %v", name, lineCol(data, syntax.Offset-1), err)
	case errors.As(err, &typ):
		return fmt.Errorf("%s:%s: %s: a JSON %s where %s belongs", name, lineCol(data, typ.Offset-1), typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: %s", name, "no JSON object (empty or cut short)")
	}
	return fmt.Errorf("%s: %w", name, err)
}

// lineCol is "line:column" (both from 1) of byte offset off in data.
func lineCol(data []byte, off int64) string {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("%d:%d", line, col)
}
