"""Security, sans-IO: listeners' protocols, SASL mechanisms and exchanges, principals (issue 18).

The asyncio side (TLS contexts) is in :mod:`reference_impl.server.tls`. Nothing here opens a
socket or reads a clock; nonces come from the injected ``nonce_bytes``.
"""

from .authenticator import Authenticator, Screened
from .credentials import ScramCredentials, parse_add_scram
from .settings import SECURITY_CONFIGS, ListenerSecurity, listener_prefixed, listener_security

__all__ = [
    "SECURITY_CONFIGS",
    "Authenticator",
    "ListenerSecurity",
    "ScramCredentials",
    "Screened",
    "listener_prefixed",
    "listener_security",
    "parse_add_scram",
]
