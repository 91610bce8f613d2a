"""`paictl marketplace pack`: one self-contained item document, byte-identical for the same inputs.

Description and job are inlined, the job as the YAML text the server stores, visibility normalised as the server
would on create, keys in one fixed order, no timestamps: packing twice gives the same bytes, so a packed item can be
committed, diffed and reviewed.
"""

from __future__ import annotations

from paictl.protocol.jsonout import strict_json

from .item import Item


def packed_yaml(item: Item) -> str:
    from .yamltext import dump_yaml

    return "# Packed by `paictl marketplace pack`: everything the item needs, inline.\n" + dump_yaml(item.to_document())


def packed_json(item: Item) -> str:
    return strict_json(item.to_document(), indent=2, ensure_ascii=False) + "\n"
