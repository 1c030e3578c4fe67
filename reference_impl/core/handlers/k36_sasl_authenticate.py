"""SaslAuthenticate: v0-2 (KIP-152; v1 adds ``session_lifetime_ms``, v2 is the flexible form).

The exchange itself is the authenticator's (:mod:`..security.authenticator`); a request that
reaches this handler comes after a completed authentication or on a listener that is not SASL,
and is answered ILLEGAL_SASL_STATE as Kafka's ``KafkaApis.handleSaslAuthenticateRequest`` does
(a re-authentication, KIP-368, is the authenticator's too: it begins with SaslHandshake).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(36, 0, 2)
def handle_sasl_authenticate(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    body = {
        "error_code": ErrorCode.illegal_sasl_state,
        "error_message": "SaslAuthenticate request received after successful authentication",
        "auth_bytes": b"",
        "session_lifetime": 0,
    }
    return Respond(build(response_class(36, ctx.api_version), body))
