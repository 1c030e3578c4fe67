"""Throughput of the file-backed log: appends of 16 KiB batches, then sequential reads.

Not a test: it prints figures for one machine, and they move with the disk,
the page cache and whatever else runs. Run it with::

    python -m reference_impl.log.bench [--batches 4096] [--batch-bytes 16384] [--dir DIR]

Appends go through :meth:`FileLog.append_as_leader` as the broker's produce
path does (header parse, offset and epoch rewrite, one write, sparse index),
with Kafka's default topic configs. Reads go through :meth:`FileLog.read`
as a fetch does, 1 MiB at a time, three ways: resolving the file regions
only (what the broker does before ``sendfile``), sending them with
``os.sendfile`` to ``/dev/null``, and materialising them as bytes with
``pread``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable

from reference_impl.protocol.record_set import build_batch
from reference_impl.protocol.records import parse_header

from .api import FileRegion, ReadResult
from .config import LogConfig
from .files import read_region
from .partition_log import FileLog

_FETCH_BYTES = 1 << 20


def _batch(total_bytes: int) -> bytes:
    """One uncompressed batch of about ``total_bytes``: 100-byte values, as a producer sends them."""
    value = b"x" * 100
    count = max(1, total_bytes // 110)
    batch = build_batch([(None, value)] * count, base_timestamp=1_700_000_000_000)
    while len(batch) > total_bytes and count > 1:
        count -= 1
        batch = build_batch([(None, value)] * count, base_timestamp=1_700_000_000_000)
    return batch


def _rate(label: str, seconds: float, count: int, nbytes: int, unit: str) -> str:
    seconds = max(seconds, 1e-9)
    return (f"{label:<34} {nbytes / seconds / 1e6:9.1f} MB/s {count / seconds:12,.0f} {unit}/s "
            f"({count:,} {unit}, {nbytes / 1e6:,.1f} MB in {seconds:.3f} s)")


def _sequential_reads(log: FileLog, batch_bytes: int, records_per_batch: int,
                      consume: Callable[[ReadResult], None]) -> tuple[float, int, int]:
    """Fetch the whole log from the start, 1 MiB at a time; (seconds, reads, bytes).

    Every batch has the same size, so the next fetch offset follows from
    the bytes a read returned.
    """
    offset = log.log_start_offset
    calls = 0
    nbytes = 0
    started = time.perf_counter()
    while offset < log.log_end_offset:
        result = log.read(offset, _FETCH_BYTES)
        consume(result)
        calls += 1
        nbytes += result.size
        offset += result.size // batch_bytes * records_per_batch
    return time.perf_counter() - started, calls, nbytes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=4096, help="batches to append (default 4096)")
    parser.add_argument("--batch-bytes", type=int, default=16 * 1024, help="bytes per batch (default 16384)")
    parser.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")
    args = parser.parse_args(argv)
    if args.batches < 1 or args.batch_bytes < 100:
        parser.error("--batches must be at least 1 and --batch-bytes at least 100")

    root = tempfile.mkdtemp(prefix="kh-log-bench-", dir=args.dir)
    try:
        batch = _batch(args.batch_bytes)
        records = parse_header(batch).records_count
        log = FileLog.open(os.path.join(root, "bench-0"), LogConfig(), 0)
        started = time.perf_counter()
        for i in range(args.batches):
            log.append_as_leader(bytearray(batch), 0, i)
        append_seconds = time.perf_counter() - started
        print(_rate(f"append ({len(batch):,}-byte batches)", append_seconds, args.batches,
                    args.batches * len(batch), "batches"))

        started = time.perf_counter()
        log.flush()
        print(f"{'flush (fsync of everything)':<34} {time.perf_counter() - started:9.3f} s")

        seconds, calls, nbytes = _sequential_reads(log, len(batch), records, lambda result: None)
        print(_rate("read, regions only (1 MiB fetches)", seconds, calls, nbytes, "reads"))

        null = os.open(os.devnull, os.O_WRONLY)
        try:
            def send(result: ReadResult) -> None:
                for chunk in result.chunks:
                    assert isinstance(chunk, FileRegion)
                    source = os.open(chunk.path, os.O_RDONLY)
                    try:
                        sent = 0
                        while sent < chunk.length:
                            sent += os.sendfile(null, source, chunk.position + sent, chunk.length - sent)
                    finally:
                        os.close(source)

            seconds, calls, nbytes = _sequential_reads(log, len(batch), records, send)
            print(_rate("read + sendfile to /dev/null", seconds, calls, nbytes, "reads"))
        finally:
            os.close(null)

        def materialise(result: ReadResult) -> None:
            for chunk in result.chunks:
                assert isinstance(chunk, FileRegion)
                read_region(chunk)

        seconds, calls, nbytes = _sequential_reads(log, len(batch), records, materialise)
        print(_rate("read + pread into bytes", seconds, calls, nbytes, "reads"))
        log.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
