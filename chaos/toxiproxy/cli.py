"""``kafka-harness toxiproxy [--listen HOST:PORT]``: run the project's Toxiproxy-compatible server."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

from .server import ApiError, ToxiproxyServer, split_address


async def _run(host: str, port: int) -> None:
    server = ToxiproxyServer()
    bound = await server.serve(host, port)
    print(f"toxiproxy API listening on {host}:{bound}", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="kafka-harness toxiproxy", description="Toxiproxy-compatible HTTP API and TCP proxies"
    )
    parser.add_argument("--listen", default="127.0.0.1:8474", help="API address (default 127.0.0.1:8474)")
    args = parser.parse_args(argv)
    try:
        host, port = split_address(args.listen)
    except ApiError as exc:
        print(f"kafka-harness toxiproxy: {exc}", file=sys.stderr)
        return 2
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_run(host, port))
    except OSError as exc:
        print(
            f"kafka-harness toxiproxy: cannot listen on {args.listen}: {exc.strerror or exc}", file=sys.stderr
        )
        return 2
    return 0
