"""SaslHandshake: v0-1, reached only once a connection needs no authentication.

Before authentication a SASL listener's connection has its SaslHandshake taken by the
authenticator (:mod:`..security.authenticator`). One that reaches this handler comes after a
completed authentication whose session has no expiry (with one, the authenticator takes it as the
start of a re-authentication, KIP-368), or on a listener that is not SASL: Kafka's ``KafkaApis``
(``handleSaslHandshakeRequest``) answers ILLEGAL_SASL_STATE, and so does this.
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


@handles(17, 0, 1)
def handle_sasl_handshake(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    body = {"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []}
    return Respond(build(response_class(17, ctx.api_version), body))
