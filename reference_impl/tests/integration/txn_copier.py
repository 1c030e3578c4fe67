"""A consume-transform-produce worker run as its own process, so a test can SIGKILL it mid-transaction.

``python -m reference_impl.tests.integration.txn_copier BOOTSTRAP IN OUT GROUP TXN_ID BATCH``
copies ``IN`` to ``OUT`` (value ``v`` becomes ``v>``, same partition) in transactions of ``BATCH``
records, committing the consumed offsets inside each transaction (KIP-98's
``send_offsets_to_transaction``). It prints ``committed N`` after every commit and exits when a
read of the input has come back empty for two seconds.

With ``CRASH_AFTER`` (a seventh argument) it crashes as a real producer would, in the middle of
a transaction: once ``CRASH_AFTER`` records are committed it begins the next transaction, sends
its records to the broker, and kills itself with SIGKILL before committing. The partitions are
assigned, not subscribed, so a restarted worker resumes at once from the committed offsets
instead of waiting for the dead member's session to expire.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any


def main(argv: list[str]) -> int:
    from confluent_kafka import Consumer, Producer, TopicPartition

    bootstrap, source, sink, group, txn_id, batch = argv[0], argv[1], argv[2], argv[3], argv[4], int(argv[5])
    crash_after = int(argv[6]) if len(argv) > 6 else None
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5})
    producer.init_transactions(30)
    partitions = consumer.list_topics(source, timeout=30).topics[source].partitions
    consumer.assign([TopicPartition(source, p) for p in sorted(partitions)])
    committed = 0
    idle_since = time.monotonic()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        messages: list[Any] = consumer.consume(batch, timeout=0.5)
        messages = [m for m in messages if m.error() is None]
        if not messages:
            if committed and time.monotonic() - idle_since > 2.0:
                break
            continue
        idle_since = time.monotonic()
        producer.begin_transaction()
        for m in messages:
            producer.produce(sink, m.value() + b">", partition=m.partition())
        if crash_after is not None and committed >= crash_after:
            producer.flush(30)  # the records are in the log, the transaction open
            print(f"crashing with {len(messages)} records in an open transaction", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        positions = consumer.position([TopicPartition(source, p) for p in {m.partition() for m in messages}])
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        committed += len(messages)
        print(f"committed {committed}", flush=True)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
