"""The openpai target: the job document paictl sends to an OpenPAI REST server (`POST /api/v2/jobs`, text/yaml).

An OpenPAI cluster compiles the job itself (rest-server renders the commands and builds the Framework), so what
paictl produces here is the protocol document: the validated job, with `-p`/`--parameters` overrides of the job's own
parameters written into `parameters` and, when the submission names one, `defaults.virtualCluster`.

Secrets: OpenPAI receives a job's `secrets` and registry `auth` inside the protocol, by design (the rest-server
moves them into Kubernetes Secrets and masks them in the stored config). `compile --target openpai` therefore
prints the document with every secret value and every registry username/password replaced by `******` (the keys
stay, so one sees which secrets would be sent); only `submit` builds the unmasked text, sends it and forgets it.
"""

from __future__ import annotations

import datetime

from typing import TYPE_CHECKING, Any, Mapping, Optional

from paictl.errors import UsageError

if TYPE_CHECKING:
    from paictl.compiler.profiles import Profile
    from paictl.protocol.loading import Document
    from paictl.protocol.model import Job

MASK_VALUE = "******"
CONTENT_TYPE = "text/yaml"


def protocol_document(data: Mapping[str, Any], *, parameters: Optional[Mapping[str, Any]] = None,
                      virtual_cluster: Optional[str] = None, masked: bool = True) -> dict[str, Any]:
    """The document to send: a copy of the validated data with the overrides applied (and secrets masked)."""
    document: dict[str, Any] = _copied(data)
    defined = document.get("parameters") if isinstance(document.get("parameters"), dict) else {}
    # Only parameters the job defines are overridden: an override naming none (W510, e.g. a dotted
    # `-p dataset.shards=8`, which names no top-level parameter) changes nothing, as its warning says.
    overrides = {key: value for key, value in (parameters or {}).items() if key in defined}
    if overrides:
        document["parameters"] = {**defined, **overrides}
    if virtual_cluster:
        document["defaults"] = {**(document.get("defaults") or {}), "virtualCluster": virtual_cluster}
    if masked:
        if isinstance(document.get("secrets"), dict):
            document["secrets"] = {key: MASK_VALUE for key in document["secrets"]}
        elif isinstance(document.get("secrets"), datetime.datetime):
            document["secrets"] = {}  # an unquoted date (W812): ajv's view of it, an empty mapping, hides the date
        elif "secrets" in document:
            document["secrets"] = MASK_VALUE
        for item in document.get("prerequisites") or []:
            auth = item.get("auth") if isinstance(item, dict) else None
            if isinstance(auth, dict):
                item["auth"] = {key: (value if key == "registryuri" else MASK_VALUE) for key, value in auth.items()}
    return document


def _copied(value: Any) -> Any:
    """A copy of the job's data in which an unquoted date stays a date (a datetime, which the emitter writes as a
    plain timestamp): js-yaml reads it back as the Date upstream would have read from the file, so a date rendered
    into a command prints as JavaScript prints a Date, not as the quoted text (a json round trip made it a string)."""
    moment = getattr(value, "moment", None)
    if moment is not None:
        return moment
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


def protocol_text(document: Mapping[str, Any]) -> bytes:
    """The request body: YAML that js-yaml (the rest-server's reader) reads back as the same data."""
    from paictl.compiler.emit import to_yaml

    return to_yaml([document]).encode("utf-8")


def compile(job: Job, profile: Profile, *, parameters: Mapping[str, Any] | None = None,
            secrets_from: str | None = None, document: Document | None = None) -> list[dict[str, Any]]:
    """The masked protocol document, as a one-object list (the `Target` protocol). Pure and deterministic."""
    if secrets_from is not None:
        raise UsageError("--secrets-from names a Kubernetes Secret; an OpenPAI cluster takes the secrets from the "
                         "job")
    if document is None:
        raise UsageError("the openpai target needs the job's document (compile it with paictl.compile_job)")
    return [protocol_document(document.data, parameters=parameters, masked=True)]
