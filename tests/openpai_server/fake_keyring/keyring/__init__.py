"""A stand-in for the `keyring` package (test double): the calls paictl makes, kept in a JSON file named by
$FAKE_KEYRING_FILE, so a test can see what an OS keyring would hold. Put its parent folder on PYTHONPATH."""

import json
import os

from .backends import fail


class _Store:
    pass


def _path():
    return os.environ["FAKE_KEYRING_FILE"]


def _load():
    try:
        with open(_path(), encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        return {}


def get_keyring():
    return _Store()


def get_password(service, name):
    return _load().get(f"{service}/{name}")


def set_password(service, name, value):
    data = _load()
    data[f"{service}/{name}"] = value
    with open(_path(), "w", encoding="utf-8") as handle:
        json.dump(data, handle)


def delete_password(service, name):
    data = _load()
    data.pop(f"{service}/{name}", None)
    with open(_path(), "w", encoding="utf-8") as handle:
        json.dump(data, handle)


__all__ = ["fail", "get_keyring", "get_password", "set_password", "delete_password"]
