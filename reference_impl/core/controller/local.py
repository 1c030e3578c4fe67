"""The one-node controller: a single broker is its own controller, as a one-voter KRaft combined node.

Every change (topic created, partitions added, config set) becomes records appended and flushed to
the ``__cluster_metadata`` log before it is applied to the image, so a restart replays the same
image. The decisions are :class:`~.writer.RecordWriter`'s, shared with the quorum controller; this
class adds the local log (replay and append) and what only a one-node controller does itself:
register its own broker and hand out producer ids from blocks it records.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from reference_impl.log.api import Chunk, PartitionLog
from reference_impl.protocol.record_set import build_batch, iter_records
from reference_impl.protocol.records import iter_headers

from ..metadata.image import MetadataImage
from ..metadata.records import MetadataRecord, ProducerIdsRecord, RegisterBrokerRecord, decode, encode
from .writer import PRODUCER_ID_BLOCK, RecordWriter


class LocalController(RecordWriter):
    def __init__(
        self,
        image: MetadataImage,
        log: PartitionLog,
        node_id: int,
        rng: random.Random,
        read_chunk: Callable[[Chunk], bytes],
    ) -> None:
        super().__init__(image, node_id, rng)
        self.read_chunk = read_chunk
        self.log = log
        self._producer_id_next = 0
        self._producer_id_limit = 0

    def writer(self) -> RecordWriter:
        """Who decides admin writes: this controller itself."""
        return self

    # -- persistence ---------------------------------------------------------------------------

    def load(self) -> int:
        """Replay the metadata log into the image; returns how many records were applied."""
        count = 0
        offset = self.log.log_start_offset
        while offset < self.log.log_end_offset:
            result = self.log.read(offset, 1 << 20)
            data = b"".join(self.read_chunk(c) for c in result.chunks)
            if not data:
                break
            for header in iter_headers(data):
                for record in iter_records(data, header):
                    if record.value is not None:
                        self.image.apply(decode(record.value), record.offset)
                        count += 1
                offset = header.next_offset
        return count

    def commit(self, records: Sequence[MetadataRecord], now_ms: int) -> None:
        """Append ``records`` as one batch, flush, then apply them (all or nothing)."""
        if not records:
            return
        batch = bytearray(build_batch([(None, encode(r)) for r in records], base_timestamp=now_ms))
        info = self.log.append_as_leader(batch, 0, now_ms)
        self.log.flush()
        for i, record in enumerate(records):
            self.image.apply(record, info.first_offset + i)

    # -- brokers and producer ids --------------------------------------------------------------

    def register_broker(self, node_id: int, host: str, port: int, rack: str | None, now_ms: int) -> None:
        current = self.image.brokers.get(node_id)
        if current is None or (current.host, current.port, current.rack) != (host, port, rack):
            self.commit([RegisterBrokerRecord(broker_id=node_id, host=host, port=port, rack=rack)], now_ms)

    def allocate_producer_id(self, now_ms: int) -> int:
        """Producer ids come in blocks recorded in the metadata log, so none is reused after a restart."""
        if self._producer_id_next >= self._producer_id_limit:
            start = self.image.next_producer_id
            self.commit(
                [ProducerIdsRecord(broker_id=self.node_id, next_producer_id=start + PRODUCER_ID_BLOCK)],
                now_ms,
            )
            self._producer_id_next, self._producer_id_limit = start, start + PRODUCER_ID_BLOCK
        pid = self._producer_id_next
        self._producer_id_next += 1
        return pid
