"""The OpenPAI REST server double (test code, never shipped): see server.py; held to recordings/openpai by
test_contract.py."""

from .server import Cluster, Limits, OpenPaiServer

__all__ = ["Cluster", "Limits", "OpenPaiServer"]
