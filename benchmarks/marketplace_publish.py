"""What `paictl marketplace publish` of a folder costs a marketplace server, in requests per item (each one an
identity-provider round trip on the server), counted by a proxy in front of the marketplace double (which answers as
the recorded real server does: tests/marketplace/test_marketplace_double_contract.py).

Goal (issue 40): an update costs at most 5 requests an item. Prints, for a folder of N items with two tags each:
requests to create them, to update them, per item, and the ratio to the goal; and the wall time of each run.

    python benchmarks/marketplace_publish.py [--items 50]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "marketplace"))

from marketplace_double import FaultProxy, MarketplaceDouble  # noqa: E402
from marketplace_helpers import write_item  # noqa: E402

GOAL_PER_UPDATE = 5


def publish(folder: Path, url: str, token: str) -> tuple[int, float]:
    with FaultProxy(url) as proxy:
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "paictl", "marketplace", "publish", str(folder), "--to",
                               proxy.url, "--token", token, "-o", "json"], capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"publish failed: {done.stderr}")
        return len(proxy.requests), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=50)
    items = parser.parse_args().items
    with MarketplaceDouble() as double, tempfile.TemporaryDirectory() as scratch:
        user, token = double.user("bench")
        folder = Path(scratch) / "items"
        for number in range(items):
            write_item(folder / f"i{number}", f"item-{number}", author=user,
                       extra=f"tags: [bench-{number % 5}, all]\n")
        created, created_s = publish(folder, double.url, token)
        for path in folder.rglob("*.yaml"):
            path.write_text(path.read_text().replace("A tiny job", "A renamed job"))
        updated, updated_s = publish(folder, double.url, token)
    per_update = updated / items
    print(json.dumps({"items": items, "create_requests": created, "create_per_item": round(created / items, 2),
                      "create_seconds": round(created_s, 2), "update_requests": updated,
                      "update_per_item": round(per_update, 2), "update_seconds": round(updated_s, 2),
                      "update_goal_per_item": GOAL_PER_UPDATE,
                      "update_ratio_to_goal": round(per_update / GOAL_PER_UPDATE, 2)}))


if __name__ == "__main__":
    main()
