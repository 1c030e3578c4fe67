"""What the security suites share: the run's client security and connections made from it."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from fixtures.targets.secured import RESTRICTED_CONFIG_ENV
from fixtures.wire import WireClient, WireError
from fixtures.wire.security import ClientSecurity, default_security, load_command_config

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


def restricted_security() -> ClientSecurity:
    """The restricted principal's client security, from ``$KH_RESTRICTED_COMMAND_CONFIG`` (``--security
    sasl_plaintext|sasl_ssl`` writes one for ``alice``); skips when there is none or it names no SASL
    user (its principal is then not known here)."""
    path = os.environ.get(RESTRICTED_CONFIG_ENV)
    if not path:
        pytest.skip(
            f"no restricted principal: ${RESTRICTED_CONFIG_ENV} names none (--security sasl_plaintext "
            "or sasl_ssl makes one; else give a client properties file of a user that is not a super user)"
        )
    security = load_command_config(path)
    if not security.username:
        pytest.skip("the restricted client properties name no SASL user: its principal is not known here")
    return security
