package engine_test

import (
	"fmt"
	"log"
	"os"

	"github.com/sluice-io/sluice/engine"
)

// The engine used as a plain embedded log: build a batch of records, append
// it, read it back and iterate the records. Nothing here touches batch bytes.
func Example() {
	dir, err := os.MkdirTemp("", "sluice-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	l, err := engine.OpenLog(dir, engine.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	var b engine.BatchBuilder
	for i, city := range []string{"Lisbon", "Oslo", "Kyoto"} {
		b.Add(engine.Record{
			Timestamp: 1700000000000 + int64(i),
			Key:       []byte(fmt.Sprintf("city-%d", i)),
			Value:     []byte(city),
			Headers:   []engine.Header{{Key: "source", Value: []byte("example")}},
		})
	}
	res, err := l.Append(b.Build())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("appended offsets %d to %d\n", res.FirstOffset, res.LastOffset)

	// Read everything from offset 1: the view holds whole batches.
	v, err := l.Read(1, 1<<20, l.EndOffset())
	if err != nil {
		log.Fatal(err)
	}
	data, err := v.AppendTo(nil)
	v.Release()
	if err != nil {
		log.Fatal(err)
	}
	it := engine.NewRecordIterator(data)
	for it.Next() {
		r := it.Record()
		if r.Offset < 1 {
			continue // the batch starts before the offset asked for
		}
		fmt.Printf("%d %s=%s (%s=%s)\n", r.Offset, r.Key, r.Value, r.Headers[0].Key, r.Headers[0].Value)
	}
	if err := it.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// appended offsets 0 to 2
	// 1 city-1=Oslo (source=example)
	// 2 city-2=Kyoto (source=example)
}
