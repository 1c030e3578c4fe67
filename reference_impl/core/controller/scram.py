"""SCRAM credentials, decided by the controller: AlterUserScramCredentials and the bootstrap users.

Kafka's ``ScramControlManager.alterCredentials``
(``metadata/src/main/java/org/apache/kafka/controller/ScramControlManager.java``), check for check:

* a user named twice in one request (deletions then upsertions, any mix) is DUPLICATE_RESOURCE,
  "A user credential cannot be altered twice in the same request", and nothing is done for it;
* an empty name is UNACCEPTABLE_CREDENTIAL "Username must not be empty"; a mechanism type other
  than 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512) is UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM
  mechanism";
* an upsertion's iterations below the mechanism's minimum (4096) is UNACCEPTABLE_CREDENTIAL "Too few
  iterations", above ``MAX_ITERATIONS`` (16384) "Too many iterations";
* deleting a credential that does not exist is RESOURCE_NOT_FOUND "Attempt to delete a user
  credential that does not exist";
* an upsertion becomes a ``UserScramCredentialRecord`` whose stored and server keys are computed
  from the salted password (the password itself never reaches the broker), a deletion a
  ``RemoveUserScramCredentialRecord``; the records of one request commit atomically.

Results come in Kafka's order: the deletions done, the upsertions done, then the refusals.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from reference_impl.protocol.errors import ErrorCode

from ..metadata.image import MetadataImage
from ..metadata.records import (
    SCRAM_MECHANISM_TYPES,
    MetadataRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)
from ..security.mechanisms import MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential, credential_from_salted

MECHANISM_NAMES = {t: name for name, t in SCRAM_MECHANISM_TYPES.items()}
MAX_ALTERATIONS = 1_000
"""Entries one AlterUserScramCredentials may carry here (each upsertion costs a key derivation);
the rest are refused with POLICY_VIOLATION (Kafka has no such bound; the records of one operation
are bounded by ``QuorumController.MAX_RECORDS_PER_USER_OP``)."""
DUPLICATE = "A user credential cannot be altered twice in the same request"


@dataclass(frozen=True, slots=True)
class Deletion:
    name: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class Upsertion:
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


Result = tuple[str, ErrorCode, str | None]
"""(user, error, message): one user's outcome."""


def _check_name_and_mechanism(name: str, mechanism: int) -> tuple[ErrorCode, str] | None:
    if not name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if mechanism not in MECHANISM_NAMES:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    return None


def decide(
    image: MetadataImage, deletions: Sequence[Deletion], upsertions: Sequence[Upsertion]
) -> tuple[list[MetadataRecord], list[Result]]:
    """The records carrying out the request and each user's result (nothing is written here)."""
    errors: dict[str, tuple[ErrorCode, str | None]] = {}
    to_delete: dict[str, Deletion] = {}
    to_upsert: dict[str, Upsertion] = {}
    for count, d in enumerate(deletions):
        if d.name in errors:
            continue
        if count >= MAX_ALTERATIONS:
            errors[d.name] = (ErrorCode.policy_violation, f"more than {MAX_ALTERATIONS} alterations")
        elif to_delete.pop(d.name, None) is not None:
            errors[d.name] = (ErrorCode.duplicate_resource, DUPLICATE)
        elif (problem := _check_name_and_mechanism(d.name, d.mechanism)) is not None:
            errors[d.name] = problem
        elif (d.mechanism, d.name) not in image.scram:
            errors[d.name] = (
                ErrorCode.resource_not_found,
                "Attempt to delete a user credential that does not exist",
            )
        else:
            to_delete[d.name] = d
    for count, u in enumerate(upsertions, start=len(deletions)):
        if u.name in errors:
            continue
        if count >= MAX_ALTERATIONS:
            errors[u.name] = (ErrorCode.policy_violation, f"more than {MAX_ALTERATIONS} alterations")
        elif to_delete.pop(u.name, None) is not None or to_upsert.pop(u.name, None) is not None:
            errors[u.name] = (ErrorCode.duplicate_resource, DUPLICATE)
        elif (problem := _check_name_and_mechanism(u.name, u.mechanism)) is not None:
            errors[u.name] = problem
        elif u.iterations < MIN_ITERATIONS:
            errors[u.name] = (ErrorCode.unacceptable_credential, "Too few iterations")
        elif u.iterations > MAX_ITERATIONS:
            errors[u.name] = (ErrorCode.unacceptable_credential, "Too many iterations")
        else:
            to_upsert[u.name] = u
    records: list[MetadataRecord] = []
    results: list[Result] = []
    for d in to_delete.values():
        records.append(RemoveUserScramCredentialRecord(name=d.name, mechanism=d.mechanism))
        results.append((d.name, ErrorCode.none, None))
    for u in to_upsert.values():
        if not u.salted_password:  # Kafka: the HMAC key spec throws "Empty key" → UNKNOWN_SERVER_ERROR
            errors[u.name] = (ErrorCode.unknown_server_error, "Empty key")
            continue
        records.append(upsertion_record(u))
        results.append((u.name, ErrorCode.none, None))
    results += [(name, code, message) for name, (code, message) in errors.items()]
    return records, results


def upsertion_record(u: Upsertion) -> UserScramCredentialRecord:
    """Kafka's ``finishUpsertion``: stored key H(HMAC(salted, "Client Key")), server key
    HMAC(salted, "Server Key")."""
    credential = credential_from_salted(MECHANISM_NAMES[u.mechanism], u.salted_password, u.salt, u.iterations)
    return UserScramCredentialRecord(
        name=u.name,
        mechanism=u.mechanism,
        salt=credential.salt,
        stored_key=credential.stored_key,
        server_key=credential.server_key,
        iterations=credential.iterations,
    )


def bootstrap_records(credentials: Iterable[tuple[str, str, ScramCredential]]) -> list[MetadataRecord]:
    """``kafka-storage format --add-scram``'s records, one per (mechanism name, user, credential)."""
    return [
        UserScramCredentialRecord(
            name=user,
            mechanism=SCRAM_MECHANISM_TYPES[mechanism],
            salt=c.salt,
            stored_key=c.stored_key,
            server_key=c.server_key,
            iterations=c.iterations,
        )
        for mechanism, user, c in credentials
    ]
