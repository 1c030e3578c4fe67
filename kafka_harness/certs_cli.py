"""``kafka-harness certs DIR [--hosts HOST ...]``: a CA and broker and client certificates as PEM.

    kafka-harness certs /tmp/kh-certs --hosts localhost 127.0.0.1 broker1.example

A broker uses ``ssl.keystore.type=PEM``, ``ssl.keystore.location=DIR/broker.pem``,
``ssl.truststore.type=PEM`` and ``ssl.truststore.location=DIR/ca.pem``; a client
``ssl.truststore.location=DIR/ca.pem`` (or ``ssl.ca.location``) and, for mutual TLS,
``ssl.keystore.location=DIR/client.pem``. The files are listed in :mod:`fixtures.targets.certs`.
"""

from __future__ import annotations

import argparse
import sys

from fixtures.targets.certs import DEFAULT_HOSTS, make_certs


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness certs", description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", help="where to write the PEM files (created)")
    parser.add_argument(
        "--hosts",
        nargs="+",
        default=list(DEFAULT_HOSTS),
        metavar="HOST",
        help=f"names and IPs the broker certificate is valid for (default: {' '.join(DEFAULT_HOSTS)})",
    )
    args = parser.parse_args(argv)
    try:
        files = make_certs(args.directory, tuple(args.hosts))
    except (ValueError, OSError) as exc:
        print(f"kafka-harness certs: {exc}", file=sys.stderr)
        return 2
    print(f"CA:              {files.ca}")
    print(f"broker keystore: {files.broker}  (hosts: {', '.join(args.hosts)})")
    print(f"client keystore: {files.client}  (principal User:{files.client_dn})")
    print(f"second client:   {files.restricted}  (principal User:{files.restricted_dn}; for ACL tests)")
    print("broker configs:  ssl.keystore.type=PEM ssl.keystore.location=" f"{files.broker} "
          f"ssl.truststore.type=PEM ssl.truststore.location={files.ca}")
    return 0
