"""Optional packet-level faults with iptables, beside Toxiproxy (off unless asked for, needs root).

Every broker listens on a private loopback port that only its proxies use, so DROP rules on that
port cut the proxy-to-broker hop at the packet level without touching anything else on the
machine: ``packet-drop`` drops every packet to and from one broker's port (TCP sees silence, not
a reset), ``packet-loss`` drops a random 30 % of them on every broker's port. Each rule carries
a comment naming the campaign, and every rule added is deleted on stop or heal.
"""

from __future__ import annotations

import os
import shutil
import subprocess

PACKET_FAULTS = ("packet-drop", "packet-loss")
LOSS_PROBABILITY = 0.3


def unavailable_reason() -> str | None:
    """Why packet faults cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "packet faults need root (iptables)"
    if shutil.which("iptables") is None:
        return "packet faults need iptables (apt-get install iptables)"
    probe = subprocess.run(
        ["iptables", "-w", "5", "-L", "INPUT", "-n"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        return f"iptables does not answer: {probe.stderr.strip()}"
    return None


class PacketRules:
    """The iptables rules one campaign added, so they can all be removed."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.rules: list[list[str]] = []

    def _rule(self, port: int, direction: str, probability: float | None) -> list[str]:
        match = ["-i", "lo", "-p", "tcp", f"--{direction}", str(port)]
        if probability is not None:
            match += ["-m", "statistic", "--mode", "random", "--probability", str(probability)]
        return [*match, "-m", "comment", "--comment", self.tag, "-j", "DROP"]

    def drop(self, ports: list[int], probability: float | None = None) -> list[list[str]]:
        added = []
        for port in ports:
            for direction in ("dport", "sport"):
                rule = self._rule(port, direction, probability)
                subprocess.run(["iptables", "-w", "5", "-I", "INPUT", *rule], check=True, capture_output=True)
                self.rules.append(rule)
                added.append(rule)
        return added

    def remove(self, rules: list[list[str]]) -> None:
        for rule in rules:
            subprocess.run(["iptables", "-w", "5", "-D", "INPUT", *rule], check=False, capture_output=True)
            if rule in self.rules:
                self.rules.remove(rule)

    def clear(self) -> None:
        self.remove(list(self.rules))
