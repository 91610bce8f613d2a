"""The real OpenPAI marketplace server for paictl's tests (test code only, never shipped): see peer.py.

    with MarketplacePeer(stack) as peer:              # ../shared/peers/openpaimarketplace, PostgreSQL 15; IDP: stack
        alice, token = peer.user("alice")             # an ordinary OpenPAI user and a token of theirs
        ...                                           # paictl marketplace publish ... --to peer.url
        peer.items_of(alice)                          # what the database holds

`faults.FaultProxy` sits in front of it where a test needs a failing or slow server.
"""

from .faults import FaultProxy
from .idp import OpenPaiIdentity
from .peer import OFFICIAL_EXAMPLE, MarketplacePeer, PeerUnavailable, missing, provision

__all__ = ["FaultProxy", "OpenPaiIdentity", "MarketplacePeer", "OFFICIAL_EXAMPLE", "PeerUnavailable", "missing",
           "provision"]
