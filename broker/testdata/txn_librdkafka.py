# librdkafka's transactional producer (Debian's python3-confluent-kafka)
# against a broker: run by txn_librdkafka_test.go with the broker's address
# and a topic of two partitions. One transaction of five records is
# committed, one of five aborted; then read_committed must see the five
# committed records only and read_uncommitted all ten. Prints one line per
# check; exits non-zero on any failure.
import sys
from confluent_kafka import Consumer, Producer, TopicPartition

addr, topic = sys.argv[1], sys.argv[2]

p = Producer({"bootstrap.servers": addr, "transactional.id": "rdkafka-txn",
              "transaction.timeout.ms": 60000, "linger.ms": 0})
p.init_transactions(30)
for commit in (True, False):
    p.begin_transaction()
    for i in range(5):
        value = ("committed-%d" if commit else "aborted-%d") % i
        p.produce(topic, key=b"k%d" % i, value=value.encode(), partition=i % 2)
    p.flush(30)
    if commit:
        p.commit_transaction(30)
    else:
        p.abort_transaction(30)
print("produced: one transaction committed, one aborted")


def consume(isolation, want):
    c = Consumer({"bootstrap.servers": addr, "group.id": "rdkafka-" + isolation,
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    got, eof = [], set()
    while len(eof) < 2:
        m = c.poll(10)
        if m is None:
            raise SystemExit("%s: timed out with %r" % (isolation, got))
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                eof.add(m.partition())
                continue
            raise SystemExit("%s: %s" % (isolation, m.error()))
        got.append(m.value().decode())
    c.close()
    if sorted(got) != sorted(want):
        raise SystemExit("%s: read %r, want %r" % (isolation, sorted(got), sorted(want)))
    print("%s: %d records as expected" % (isolation, len(got)))


committed = ["committed-%d" % i for i in range(5)]
aborted = ["aborted-%d" % i for i in range(5)]
consume("read_committed", committed)
consume("read_uncommitted", committed + aborted)
