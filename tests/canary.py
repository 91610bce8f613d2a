"""Planting secrets in a job and checking where they end up: shared by the secrets canary tests of every target."""

from __future__ import annotations

import base64
import dataclasses
import io
import json

from paictl.compiler.profiles import load_profile

SECRET = "canary-secret-7f3a9c"
PASSWORD = "canary-password-b41e02"
USERNAME = "canary-user-c93d11"


def plant(data: dict) -> dict:
    data = json.loads(json.dumps(data))
    data.setdefault("secrets", {})
    data["secrets"] = {**(data["secrets"] if isinstance(data["secrets"], dict) else {}), "canary": SECRET}
    for item in data.get("prerequisites") or []:
        if item.get("type") == "dockerimage":
            item["auth"] = {"username": USERNAME, "password": PASSWORD, "registryuri": "registry.example.org"}
    return data


def dump(data: dict) -> str:
    from ruamel.yaml import YAML

    stream = io.StringIO()
    YAML(typ="safe", pure=True).dump(data, stream)
    return stream.getvalue()


def profiles():
    openpai = load_profile("openpai")
    hived = dataclasses.replace(openpai, hived=dataclasses.replace(openpai.hived, enabled=True))
    return {"default": load_profile("default"), "openpai": openpai, "openpai+hived": hived}


CANARIES = (SECRET, PASSWORD, USERNAME)


def decode(value: str) -> str:
    """A Secret value base64-decoded; a docker config's inner `auth` (base64 of user:password) decoded as well."""
    text = base64.b64decode(value).decode("utf-8", "replace")
    try:
        auths = json.loads(text)["auths"]
    except (ValueError, KeyError, TypeError):
        return text
    return text + "".join(base64.b64decode(entry["auth"]).decode("utf-8", "replace") for entry in auths.values())


def assert_only_in_secrets(objects: list[dict], where: str) -> None:
    found_in_secret = set()
    for obj in objects:
        text = json.dumps(obj)
        if obj["kind"] == "Secret":
            decoded = text + "".join(decode(v) for v in (obj.get("data") or {}).values())
            found_in_secret |= {c for c in CANARIES if c in decoded}
        else:
            leaked = [c for c in CANARIES if c in text]
            assert not leaked, f"{where}: {leaked} in {obj['kind']} {obj['metadata']['name']}"
    assert SECRET in found_in_secret, f"{where}: the job secrets Secret is missing"
    assert PASSWORD in found_in_secret, f"{where}: the registry Secret is missing"

