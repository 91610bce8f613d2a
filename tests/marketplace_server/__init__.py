"""A marketplace server for paictl's tests (test code only, never shipped), answering on 127.0.0.1.

It behaves as `/work/shared/reference/marketplace-server.md` records the real one (microsoft/openpaimarketplace,
`rest_server/`) behaving, observed by running it:

    with MarketplaceTestServer() as server:
        token = server.add_user("alice")              # a JWT-shaped token the built-in IDP knows
        ...                                           # paictl marketplace publish ... --to server.url
        assert not server.requests_with("PUT")

- routes at the root: /items, /items/:id, /items/:id/tag[/:tagId], /items/:id/category[/:id], /tags[/:id],
  /categories[/:id]; unknown routes 404;
- the IDP token check: write routes (POST/PUT/DELETE) ask the IDP's `tokens/check` (any token it knows); read
  routes decode the bearer token as a JWT (no signature check) for `username`, then ask the IDP for the user:
  a token that is not JWT-shaped works for writes and gets 401 on every read;
- bodies are read only when `application/json` (anything else is an empty body); errors are plain text with
  `text/html; charset=utf-8`;
- POST /items checks author (400/403), empty protocol (400) and the protocol (YAML text, OpenPAI's schema: 400
  `The protocol is not valid`, also for a protocol sent as an object); PUT validates nothing and takes any
  change, author included; a value the database refuses (`source`, a string over 255 characters) is 500;
- tags and categories in an item's body are stored but not linked; `?tag=`/`?category=` read the links;
  several values (`?tag=a,b`) always give `[]`; a single tag trims the answer's `ItemTags` to that tag;
- POST /tags and /categories create a new row every time (names are not unique);
- items shared with groups (neither public nor private) are never listed for non-admins;
- PUT/DELETE of an unknown id: 404 for an admin, 500 `Unexpected internal error` for anyone else.

Every request is recorded (`requests`), with its headers, so tests can assert what paictl sent.
"""

from .server import MarketplaceTestServer, RecordedRequest, jwt_token

__all__ = ["MarketplaceTestServer", "RecordedRequest", "jwt_token"]
