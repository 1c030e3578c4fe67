"""Latency the project's Toxiproxy adds with no toxics: ``python -m chaos.toxiproxy.bench [--pings N]``.

Round trips of a small message to an echo server, directly and through a proxy of a server
started as its own process (as campaigns run it); prints medians and p99 of both and the
difference. A measurement, not a test: the target is under 1 ms added.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import threading
import time

import requests

from .finder import find_toxiproxy


def _echo_server() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with conn:
                while data := conn.recv(4096):
                    conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    return server


def _round_trips(port: int, pings: int) -> list[float]:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        times = []
        for _ in range(pings):
            start = time.perf_counter()
            sock.sendall(b"x" * 100)
            got = 0
            while got < 100:
                got += len(sock.recv(4096))
            times.append(time.perf_counter() - start)
        return times


def _summary(times: list[float]) -> str:
    ordered = sorted(times)
    return (
        f"median {statistics.median(ordered) * 1e6:7.0f} µs   "
        f"p99 {ordered[int(len(ordered) * 0.99) - 1] * 1e6:7.0f} µs"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pings", type=int, default=2000)
    args = parser.parse_args(argv)
    echo = _echo_server()
    with find_toxiproxy(prefer_project=True) as endpoint:
        proxy = requests.post(
            f"{endpoint.url}/proxies",
            timeout=5,
            json={"name": "bench", "upstream": f"127.0.0.1:{echo.getsockname()[1]}"},
        ).json()
        proxy_port = int(proxy["listen"].rsplit(":", 1)[1])
        direct = _round_trips(echo.getsockname()[1], args.pings)
        proxied = _round_trips(proxy_port, args.pings)
    echo.close()
    added = statistics.median(proxied) - statistics.median(direct)
    print(f"direct   {_summary(direct)}")
    print(f"proxied  {_summary(proxied)}   ({endpoint.kind} server, no toxics)")
    print(f"added by the proxy (median round trip, both directions): {added * 1e6:.0f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
