package txn_test

import (
	"fmt"

	"github.com/sluice-io/sluice/coordinator/txn"
)

// A driver's loop in miniature: an InitProducerId is answered once its
// record is written.
func Example() {
	next := int64(4000)
	c := txn.New(0, 1, txn.Options{NewProducerID: func() (int64, int16) { next++; return next - 1, 0 }})
	c.Step(txn.Loaded{})
	c.Step(txn.Tick{NowMs: 1000})
	c.Step(txn.InitProducerID{Req: 1, Version: 4, TransactionalID: "orders", TimeoutMs: 60000, ProducerID: -1, Epoch: -1})
	rd := c.Ready()
	c.Advance(rd)
	fmt.Println(len(rd.Writes), "record to write,", len(rd.Answers), "answers")
	for _, w := range rd.Writes { // appended to __transaction_state with acks=all
		c.Step(txn.WriteResult{ID: w.ID})
	}
	rd = c.Ready()
	c.Advance(rd)
	fmt.Printf("%+v\n", rd.Answers[0])
	// Output:
	// 1 record to write, 0 answers
	// {Req:1 Code:0 ProducerID:4000 Epoch:0}
}
