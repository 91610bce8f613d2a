"""A test OpenPAI REST server (test code, never shipped): see server.py."""

from .server import LOG_TOKEN, OpenPaiServer

__all__ = ["LOG_TOKEN", "OpenPaiServer"]
