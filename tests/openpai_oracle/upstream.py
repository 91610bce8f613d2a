"""What OpenPAI's rest-server answered, as recorded beside the checkout: the differential test's upstream side.

No upstream code runs here. The answers are data in ../shared:
- corpus/openpai/valid/ with golden/{default,hived}/<job>.json (the body the unchanged rest-server sent to the
  database-controller for each job, per scheduler mode) and UPSTREAM_RESULTS.json (its entrypoints per task role,
  or its refusal for the nonconforming jobs);
- corpus/openpai/invalid/ with EXPECTED_UPSTREAM_OUTPUT.json (upstream's refusals of its own unit-test cases);
- reference/recordings/openpai/submit*.jsonl: submissions to the real server (202, a 400 InvalidProtocolError with
  ajv's messages, a 500 for YAML js-yaml cannot read).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
CORPUS = SHARED / "corpus" / "openpai"
RECORDINGS = SHARED / "reference" / "recordings" / "openpai"


@lru_cache(maxsize=None)
def _results() -> dict[str, Any]:
    return json.loads((CORPUS / "UPSTREAM_RESULTS.json").read_text())


def accepted_answer(name: str, hived: bool) -> dict[str, Any]:
    """Upstream's answer for the valid corpus job `name`: accepted, its entrypoints and the body it sent."""
    golden = json.loads((CORPUS / "golden" / ("hived" if hived else "default") / f"{Path(name).stem}.json")
                        .read_text())
    result = _results()[name]
    assert result["ok"], name
    return {"verdict": "accepted", "entrypoints": result["entrypoints"], "body": golden["data"]}


def refused_corpus_jobs() -> list[tuple[str, str, str]]:
    """(name, text, upstream's reason) of every corpus job upstream refused."""
    found = []
    for name, result in sorted(_results().items()):
        if not result["ok"]:
            found.append((name, (CORPUS / name).read_text(encoding="utf-8"), _reason(result)))
    expected = json.loads((CORPUS / "invalid" / "EXPECTED_UPSTREAM_OUTPUT.json").read_text())
    for name, result in sorted(expected.items()):
        if not result["ok"]:
            found.append((f"invalid/{name}", (CORPUS / "invalid" / name).read_text(encoding="utf-8"),
                          _reason(result)))
    return found


def _reason(result: dict[str, Any]) -> str:
    message = result.get("message")
    if isinstance(message, list):
        message = "; ".join(f"{e.get('dataPath')} {e.get('message')}" for e in message)
    return f"{result.get('status', 500)} {result.get('code') or result.get('name')}: {message}"


def recorded_submissions() -> list[tuple[str, str, int, str]]:
    """(recording, YAML text, status, upstream's message) of every recorded `POST /api/v2/jobs` with a YAML body
    whose answer depends on the text alone (not 403/409, which depend on the user and the jobs already there)."""
    found = []
    for path in sorted(RECORDINGS.glob("submit*.jsonl")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            exchange = json.loads(line)
            request, response = exchange["request"], exchange["response"]
            if request["method"] != "POST" or request["path"] != "/api/v2/jobs" \
                    or request["headers"].get("content-type") != "text/yaml" or response["status"] in (403, 409):
                continue
            body = response["body"] if isinstance(response["body"], dict) else {}
            found.append((f"{path.name}:{number}", request["body"], response["status"], str(body.get("message"))))
    return found


def available() -> bool:
    return (CORPUS / "UPSTREAM_RESULTS.json").is_file()
