"""ApiVersions: v0-4. Every API and version range this broker has a handler for that the listener
asked serves (a controller listener the controller's APIs; a broker listener never the quorum's).

Version notes: v3+ adds client software name/version, which must match
``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?`` (KIP-511; INVALID_REQUEST otherwise), and
the features lists, from the feature table (core/metadata/features.py): ``group.version``
finalized at 1 (KIP-848 is on, as in a new Kafka 4.x cluster; KIP-1022),
``metadata.version`` at 25 (4.0-IV3), ``transaction.version`` at 1; finalized statically
with epoch 0 (no FeatureLevelRecord in the metadata log yet). A request at a version
above 4 gets a v0 body with UNSUPPORTED_VERSION (the broker layer does that,
as Kafka does, so the client can retry at a version both know).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from reference_impl.core.metadata import features
from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from .registry import HANDLERS, Reply, Respond, handles

if TYPE_CHECKING:
    from ..metadata.image import MetadataImage
    from ..request_context import RequestContext
    from .host import HandlerHost


SOFTWARE_NAME = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


@handles(18, 0, 4)
def handle_api_versions(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    if ctx.api_version >= 3 and not all(
        SOFTWARE_NAME.fullmatch(getattr(request, f) or "")
        for f in ("client_software_name", "client_software_version")
    ):
        cls = response_class(18, ctx.api_version)
        refused = {"error_code": ErrorCode.invalid_request, "api_keys": [], "throttle_time": 0}
        return Respond(build(cls, refused))
    if ctx.api_version >= 3:  # KIP-714's software selectors match what the connection said here
        broker.telemetry.note_software(
            ctx.connection_id, request.client_software_name, request.client_software_version
        )
    keys = [
        {"api_key": h.api_key, "min_version": h.min_version, "max_version": h.max_version}
        for h in sorted(HANDLERS.values(), key=lambda h: h.api_key)
        if broker.serves(h.api_key, ctx.listener)
    ]
    body: dict[str, Any] = {"error_code": 0, "api_keys": keys, "throttle_time": 0}
    if ctx.api_version >= 3:
        kraft = broker.quorum.raft.membership.history.kraft_version
        body.update(feature_lists(ctx.api_version, broker.image, kraft))
    return Respond(build(response_class(18, ctx.api_version), body))


def feature_lists(api_version: int, image: MetadataImage, kraft_version: int = 0) -> dict[str, Any]:
    """The v3+ feature fields from the feature table. Below v4 a feature whose lowest supported
    level is 0 is left out of the supported list (Kafka's ApiVersionsResponse.java, KAFKA-17492:
    older clients refuse a range starting at 0); finalized levels of 0 are never listed.
    Finalized levels and their epoch come from the image's FeatureLevelRecords once the log has
    any (issue 20); before that, the table's bootstrap levels at epoch 0."""
    supported = [
        {"name": f.name, "min_version": f.min_level, "max_version": f.max_level}
        for f in features.FEATURES.values()
        if api_version >= 4 or f.min_level > 0
    ]
    levels, epoch = features.effective_levels(image.finalized_features, image.features_epoch)
    if kraft_version > 0:  # the quorum's own KRaftVersionRecord, never a FeatureLevelRecord (KAFKA-18979)
        levels = {**levels, features.KRAFT_VERSION.name: kraft_version}
    finalized = [
        {"name": name, "min_version_level": level, "max_version_level": level}
        for name, level in levels.items()
    ]
    return {
        "supported_features": supported,
        "finalized_features_epoch": epoch,
        "finalized_features": finalized,
    }
