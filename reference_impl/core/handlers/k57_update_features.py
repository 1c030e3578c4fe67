"""UpdateFeatures: v0-2. Change the cluster's finalized feature levels (KIP-584, KIP-778, issue 20).

Kafka's sources (read, not copied): clients/src/main/resources/common/message/
UpdateFeaturesRequest.json / UpdateFeaturesResponse.json (v1 adds ``ValidateOnly`` and
``UpgradeType``, v2 drops the per-feature results), core/src/main/scala/kafka/server/
ControllerApis.scala ``handleUpdateFeatures`` (ALTER on the CLUSTER, else the request's error
response: CLUSTER_AUTHORIZATION_FAILED at the top level, no results), metadata/src/main/java/org/
apache/kafka/controller/QuorumController.java ``updateFeatures`` (one top-level error for the whole
request, "The update failed for all features since the following feature had an error: ...",
and no results; on success a result per requested feature at v0-1, carrying
``Errors.NONE.message()``, which is "NONE") and FeatureControlManager.java (the checks,
:mod:`..metadata.feature_updates`).

The controller decides and commits the FeatureLevelRecords to the metadata log, so every broker's
ApiVersions shows the new finalized levels and epoch, and they survive restarts and snapshots. In a
cluster a broker forwards the request to the active controller (KIP-590, as ``KafkaApis`` does for
UPDATE_FEATURES) and the answer waits for the records' commit. As in Kafka, the controller reads
``UpgradeType`` only: at v0 (no such field) every update is an upgrade, whatever ``AllowDowngrade``
says, so a v0 downgrade is INVALID_UPDATE_VERSION.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..metadata import feature_updates
from .access import Op, cluster_allowed
from .registry import Reply, Respond, handles
from .scram_common import CLUSTER_AUTHORIZATION_MESSAGE

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(57, 0, 2)
def handle_update_features(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    if not cluster_allowed(broker, ctx, Op.ALTER):
        return _answer(ctx, ErrorCode.cluster_authorization_failed, CLUSTER_AUTHORIZATION_MESSAGE)
    updates = [
        feature_updates.Update(
            str(u.feature), int(u.max_version_level), int(getattr(u, "upgrade_type", feature_updates.UPGRADE))
        )
        for u in request.feature_updates
    ]
    validate_only = bool(getattr(request, "validate_only", False))
    try:
        code, message = broker.controller.writer().update_features(
            updates, validate_only=validate_only, now_ms=ctx.received_ms
        )
    except KafkaError as exc:  # NOT_CONTROLLER: the request's error response
        return _answer(ctx, exc.code, exc.message)
    if code != feature_updates.NONE:
        return _answer(ctx, ErrorCode(code), feature_updates.FAILED_PREFIX + (message or ""))
    results = [{"feature": u.name, "error_code": ErrorCode.none, "error_message": "NONE"} for u in updates]
    return _answer(ctx, ErrorCode.none, None, results)


def _answer(
    ctx: RequestContext, code: ErrorCode, message: str | None, results: list[dict[str, Any]] | None = None
) -> Respond:
    body = {"throttle_time": 0, "error_code": code, "error_message": message, "results": results or []}
    return Respond(build(response_class(57, ctx.api_version), body))
