# librdkafka (Debian's python3-confluent-kafka) against a SASL_SSL listener
# with SCRAM-SHA-256 as alice/alice-secret: run by sasl_clients_test.go as
#
#   sasl_librdkafka.py MODE ADDR CA_FILE TOPIC
#
# produce-consume: ten records produced, read back by a consumer group; a
#   wrong password fails with _AUTHENTICATION.
# reauth: the broker has short sessions (connections.max.reauth.ms, told by
#   SaslAuthenticate v1). Record i is produced and consumed before record
#   i+1 until several session lifetimes have passed. librdkafka from 2.2
#   re-authenticates on the same connection (KIP-368), so no connection may
#   be lost; older versions do not, so the broker must have closed expired
#   sessions' connections (Kafka's KAFKA-9241 rule) and the clients must
#   have carried on over new ones.
# Prints one line per check; exits non-zero on any failure.
import json
import sys
import time
from confluent_kafka import Consumer, KafkaError, Producer, libversion

mode, addr, ca, topic = sys.argv[1:5]
REAUTH_VERSION = 0x020200ff  # librdkafka 2.2.0: KIP-368 re-authentication


def conf(password="alice-secret", **more):
    c = {"bootstrap.servers": addr, "security.protocol": "SASL_SSL",
         "ssl.ca.location": ca, "sasl.mechanisms": "SCRAM-SHA-256",
         "sasl.username": "alice", "sasl.password": password}
    c.update(more)
    return c


def fail(msg):
    raise SystemExit("FAIL: " + msg)


def deliver(err, msg):
    if err is not None:
        fail("delivery of %r: %s" % (msg.value(), err))


def next_record(c, deadline_s, what):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            fail("%s: %s" % (what, m.error()))
        return m
    fail("%s: nothing in %ss" % (what, deadline_s))


def produce_consume():
    p = Producer(conf(**{"linger.ms": 0, "enable.idempotence": True}))
    for i in range(10):
        p.produce(topic, value=b"%d" % i, on_delivery=deliver)
    if p.flush(30) != 0:
        fail("records left unflushed")
    print("produced 10 records")
    c = Consumer(conf(**{"group.id": "rdkafka-sasl", "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    got = [next_record(c, 30, "record %d" % i).value().decode() for i in range(10)]
    c.close()
    if got != [str(i) for i in range(10)]:
        fail("consumed %r" % got)
    print("consumed 10 records")

    errs = []
    bad = Producer(conf("wrong", error_cb=errs.append))
    end = time.monotonic() + 20
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errs):
        if time.monotonic() > end:
            fail("wrong password: errors %r" % errs)
        bad.poll(0.2)
    print("wrong password: %s" % next(e for e in errs if e.code() == KafkaError._AUTHENTICATION))


def reauth(lifetime_s=1.5):
    stats = {}
    errors = []

    def keep(name):
        def cb(s):
            stats[name] = json.loads(s)
        return cb

    common = {"statistics.interval.ms": 100, "error_cb": errors.append}
    p = Producer(conf(**common, **{"linger.ms": 0, "enable.idempotence": True, "stats_cb": keep("producer")}))
    c = Consumer(conf(**common, **{"group.id": "rdkafka-reauth", "auto.offset.reset": "earliest",
                                   "fetch.wait.max.ms": 100, "stats_cb": keep("consumer")}))
    c.subscribe([topic])
    start, i = time.monotonic(), 0
    while True:
        p.produce(topic, value=b"%d" % i, on_delivery=deliver)
        if p.flush(20) != 0:
            fail("record %d unflushed" % i)
        m = next_record(c, 20, "record %d" % i)
        if m.value() != b"%d" % i:
            fail("record %d: read %r" % (i, m.value()))
        i += 1
        if time.monotonic() - start > 3.5 * lifetime_s:
            break
    # Statistics taken after the last record.
    stats.clear()
    end = time.monotonic() + 10
    while len(stats) < 2:
        if time.monotonic() > end:
            fail("no statistics after the last record: %r" % list(stats))
        p.poll(0.05)
        c.poll(0.05)
    c.close()

    def disconnects(name):
        return sum(b.get("disconnects", 0) for b in stats[name]["brokers"].values() if b.get("nodeid", 0) >= -1 and b.get("source") != "internal")

    lost = {name: disconnects(name) for name in ("producer", "consumer")}
    ver, vint = libversion()
    print("librdkafka %s: %d records over %.1fs, %.1f session lifetimes; connections lost: %r"
          % (ver, i, time.monotonic() - start, (time.monotonic() - start) / lifetime_s, lost))
    if vint >= REAUTH_VERSION:
        if any(lost.values()) or errors:
            fail("librdkafka re-authenticates, yet connections were lost (%r) or errors reported (%r)" % (lost, errors))
    elif lost["consumer"] == 0:
        fail("librdkafka %s does not re-authenticate, yet the broker never closed an expired session" % ver)
    print("kept working across several session lifetimes")


{"produce-consume": produce_consume, "reauth": reauth}[mode]()
