"""``kafka-harness spark up|down|status``: a Spark standalone cluster on this machine, for users.

``up`` starts a master and workers from the PySpark installation (loopback, free ports, bounded
cores and memory per worker; :mod:`spark_load.standalone`), prints the master URL to pass as
``--spark-master`` and keeps a state file under ``reports/output/spark/<name>/``; ``down`` stops
exactly what ``up`` started; ``status`` says which of its processes still run. Exit status 0 done,
2 could not (a one-line reason).
"""

from __future__ import annotations

import argparse
import sys

from . import standalone


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness spark", description=__doc__)
    parser.add_argument("action", choices=("up", "down", "status"))
    parser.add_argument("--name", default="standalone", help="cluster name (its folder and state file)")
    parser.add_argument("--workers", type=int, default=1, help=f"1..{standalone.MAX_WORKERS}")
    parser.add_argument("--cores", type=int, default=2, help="cores each worker offers")
    parser.add_argument("--memory", default="1g", help="memory each worker offers (512m, 2g...)")
    parser.add_argument("--timeout", type=float, default=standalone.START_TIMEOUT_S, help="start bound, s")
    args = parser.parse_args(argv)
    path = standalone.state_path(args.name)
    try:
        if args.action == "up":
            if path.exists() and any(standalone.status(standalone.load(path)).values()):
                raise standalone.StandaloneError(
                    f"cluster {args.name!r} is already up ({path}); `kafka-harness spark down` first"
                )
            cluster = standalone.start(
                args.name, workers=args.workers, cores=args.cores, memory=args.memory, timeout_s=args.timeout
            )
            standalone.save(cluster, path)
            print(f"logs: {cluster.directory}")
            print(f"master: {cluster.master_url}")
            return 0
        cluster = standalone.load(path)
        if args.action == "status":
            running = standalone.status(cluster)
            for role, alive in running.items():
                print(f"{role}: {'running' if alive else 'stopped'}")
            print(f"master: {cluster.master_url} ({'up' if all(running.values()) else 'not up'})")
            return 0 if all(running.values()) else 1
        stopped = standalone.stop(cluster)
        path.unlink(missing_ok=True)
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
        return 0
    except standalone.StandaloneError as exc:
        print(f"kafka-harness spark: {exc}", file=sys.stderr)
        return 2
