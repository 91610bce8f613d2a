"""A double of the OpenPAI marketplace server (microsoft/openpaimarketplace `rest_server`) for paictl's tests.

The server is in no package registry, so tests run this instead, held to what the unchanged server answered:
`tests/marketplace/test_marketplace_double_contract.py` replays every recorded exchange of
`../shared/reference/recordings/marketplace` against it and compares status, kept headers (the etag included) and
body. It answers as the recordings show:

    with MarketplaceDouble() as double:               # 30 seeded example items by OpenPAI, on 127.0.0.1
        alice, token = double.user("alice", exact=True)
        ...                                           # paictl marketplace publish ... --to double.url
        double.items_of("alice")                      # what it holds, with the linked tag and category names

- routes at the root (`/items`, `/items/:id`, `/items/:id/tag[/:tagId]`, `/items/:id/category[/:id]`,
  `/tags[/:id]`, `/categories[/:id]`, `/` the welcome text); any other route gets express' HTML 404 page;
- bodies: JSON only (other content types read as empty), 413 `request entity too large` over 100 kB, 400 with
  Node's `JSON.parse` message for broken JSON; errors are plain text sent as `text/html`; every `res.send` answer
  carries express' weak etag;
- its identity provider (`identity.py`) holds the users and tokens OpenPAI would; `identity.fail(500)` makes it an
  identity provider that is down (the marketplace answers 500 `Something wrong with token idp api`);
- the seed (`seed.json`): the recorded 30 items, 26 tags and the `official example` category, with the recorded ids
  and the shortened texts of the recordings;
- the quirks paictl works around: `keyword` is an ILIKE pattern, tags and categories in a body are not links,
  `?tag=a,b` finds nothing, group-shared items are never listed to non-admins, re-linking answers 404, an unknown
  tag id 500, PUT validates nothing, unknown ids on PUT/DELETE are 500 for non-admins.

`faults.FaultProxy` goes in front of it where a test needs one request to fail, hang up or be slow.
"""

from .faults import FaultProxy
from .identity import IdentityProvider
from .server import OFFICIAL_EXAMPLE, Marketplace, MarketplaceDouble

__all__ = ["FaultProxy", "IdentityProvider", "Marketplace", "MarketplaceDouble", "OFFICIAL_EXAMPLE"]
