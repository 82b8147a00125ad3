package txn

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/sluice-io/sluice/engine"
)

// TestRecordBytes pins the key and value bytes to Kafka's TransactionLog
// layout, written out field by field.
func TestRecordBytes(t *testing.T) {
	if got, want := hex.EncodeToString(EncodeKey("tx")), "0000"+"0002"+"7478"; got != want {
		t.Fatalf("key %s, want %s", got, want)
	}
	m := Metadata{TransactionalID: "tx", ProducerID: 5, Epoch: 1, TimeoutMs: 60000, State: Ongoing,
		Partitions: []engine.Partition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 2}}, UpdateMs: 7, StartMs: 6}
	v0 := "0000" + "0000000000000005" + "0001" + "0000ea60" + "01" +
		"00000001" + "000174" + "00000002" + "00000000" + "00000002" +
		"0000000000000007" + "0000000000000006"
	if got := hex.EncodeToString(EncodeValue(m, 0)); got != v0 {
		t.Fatalf("v0 value\n%s, want\n%s", got, v0)
	}
	v1 := "0001" + "0000000000000005" + "0001" + "0000ea60" + "01" +
		"02" + "0274" + "03" + "00000000" + "00000002" + "00" +
		"0000000000000007" + "0000000000000006" + "00"
	if got := hex.EncodeToString(EncodeValue(m, 1)); got != v1 {
		t.Fatalf("v1 value\n%s, want\n%s", got, v1)
	}
	// Empty writes a null partitions array.
	e := Metadata{ProducerID: 5, State: Empty, StartMs: -1}
	if got := EncodeValue(e, 0)[2+8+2+4+1:][:4]; !bytes.Equal(got, []byte{0xff, 0xff, 0xff, 0xff}) {
		t.Fatalf("Empty's partitions %x, want null", got)
	}
	for _, v := range []int16{0, 1} {
		back, tomb, err := DecodeRecord(EncodeKey("tx"), EncodeValue(m, v))
		if err != nil || tomb || back.ProducerID != 5 || back.State != Ongoing || len(back.Partitions) != 2 || back.Partitions[1].Partition != 2 || back.StartMs != 6 {
			t.Fatalf("v%d round trip: %+v %v %v", v, back, tomb, err)
		}
	}
	if _, _, err := DecodeRecord(EncodeKey("tx"), []byte{0, 1, 2}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short value: %v", err)
	}
}
