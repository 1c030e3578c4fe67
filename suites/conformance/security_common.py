"""What the security suites share: the run's client security and connections made from it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fixtures.wire import WireClient, WireError
from fixtures.wire.security import ClientSecurity, default_security

SASL_RULE = "SaslServerAuthenticator.java"
TLS_RULE = "SslTransportLayer.java"


def run_security(what: str) -> ClientSecurity:
    """The run's client security (``--command-config`` / ``--security``); skips when it has no ``what``
    (sasl or tls): the target is then reached without that layer, so there is nothing to check."""
    security = default_security() or ClientSecurity()
    if not getattr(security, what):
        pytest.skip(
            f"the target is reached over {security.protocol}: no {what.upper()} listener to check "
            "(run with --security or --command-config naming one)"
        )
    return security


def closed_without_answer(wire: WireClient, send: Callable[[], object]) -> bool:
    """Whether the broker closed the connection instead of answering ``send()``."""
    try:
        send()
    except WireError:
        return True
    return wire.is_closed_by_peer(wait_s=5.0)
