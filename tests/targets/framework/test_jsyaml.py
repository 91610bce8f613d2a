"""The HiveD annotation's text is js-yaml 3's `safeDump` of the spec: scalars quoted, folded and escaped as it does.

The table was written by js-yaml 3.14.2 (npm) for these values; the property test asks the same js-yaml, as a peer
(tests/openpai_oracle/npm_peers.py), about generated values, and skips where the peer is not provisioned.
"""

from __future__ import annotations

import datetime
import json
import random
import subprocess
from pathlib import Path

import pytest

from paictl.protocol.timestamps import Timestamp
from paictl.targets.framework.jsyaml import safe_dump

PEER = Path(__file__).resolve().parents[2] / "openpai_oracle" / "jsyamldump.js"


@pytest.mark.parametrize("value, text", [
    ({"name": "alice~facts/g 1", "cell": "g 1"}, "name: alice~facts/g 1\ncell: g 1\n"),
    ({"name": "alice~facts/组"}, "name: alice~facts/组\n"),
    ({"cell": "1x", "n": "1", "o": "0x1F", "u": "_1", "d": "2020-01-01"},
     "cell: 1x\n'n': '1'\no: '0x1F'\nu: _1\nd: '2020-01-01'\n"),  # `n` was a YAML 1.1 boolean
    ({"a": "a: b", "h": "#x", "i": "x#y", "y": "yes", "m": "-1", "t": "true", "e": ""},
     "a: 'a: b'\nh: '#x'\ni: x#y\n'y': 'yes'\nm: '-1'\nt: 'true'\ne: ''\n"),
    ({"emoji": "😀", "tab": "a\tb", "nel": "a\x85b"}, 'emoji: "\\U0001F600"\ntab: "a\\tb"\nnel: "a\\Nb"\n'),
    ({"b": 5e-7, "z": -0.0, "f": 1.5, "i": 10 ** 21, "n": None, "t": True},
     "b: 5.e-7\nz: -0.0\nf: 1.5\ni: 1e+21\n'n': null\nt: true\n"),
    ({"x": "1", "10": 1, "2": 2}, "'2': 2\n'10': 1\nx: '1'\n"),  # Object.keys: array indexes first
    ({"d": [[1, 2], {}, []], "m": {}}, "d:\n  - - 1\n    - 2\n  - {}\n  - []\nm: {}\n"),
    ({"e": "x" * 30 + " " + "y" * 60, "f": "l1\nl2\n"},
     "e: >-\n  " + "x" * 30 + "\n  " + "y" * 60 + "\nf: |\n  l1\n  l2\n"),
    ({"a": Timestamp("2020-01-01", datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc))},
     "a: 2020-01-01T00:00:00.000Z\n"),
])
def test_values_are_written_as_js_yaml_writes_them(value, text):
    assert safe_dump(value) == text


_ALPHABET = list("aZ09 _-~/.:#'\"!&*?|>=%@`,[]{}\n\t\r\\") + ["é", "组", "😀", "\u2028", "\x85", "\xa0", "\ufeff",
                                                                "\x00", "\x7f"]
_WORDS = ["true", "null", "yes", "No", "~", "1", "0x1F", "1_000", "1:30", ".inf", "2020-01-01", "<<", "1e3", "-",
          "", " ", "0o7", "0b1", ".5", "+1", "1.", "_1"]


def _text(rng: random.Random) -> str:
    if rng.random() < 0.25:
        return rng.choice(_WORDS)
    size = rng.choice([1, 2, 3, 5, 10, 30, 90, 200])
    return "".join(rng.choice(_ALPHABET) if rng.random() < 0.4 else rng.choice("abc de") for _ in range(size))


def _value(rng: random.Random, depth: int = 0):
    choice = rng.random()
    if depth > 2 or choice < 0.5:
        kind = rng.random()
        if kind < 0.6:
            return _text(rng)
        if kind < 0.7:
            return rng.choice([0, -1, 7, 2 ** 53, 10 ** 21, 1.5, -0.0, 5e-7, 1e-7, 123.456, 1e300])
        return rng.choice([True, False, None, {}, []])
    if choice < 0.75:
        return {_text(rng) if rng.random() < 0.7 else str(rng.randint(0, 20)): _value(rng, depth + 1)
                for _ in range(rng.randint(1, 4))}
    return [_value(rng, depth + 1) for _ in range(rng.randint(1, 4))]


def test_generated_values_are_written_as_js_yaml_writes_them():
    from openpai_oracle.npm_peers import required

    folder = required()
    rng = random.Random(7)
    values = [{"virtualCluster": "default", "x": _value(rng)} for _ in range(1500)]
    answer = subprocess.run(["node", str(PEER), str(folder)], input="".join(json.dumps(v) + "\n" for v in values),
                            capture_output=True, text=True, encoding="utf-8", check=True, timeout=120)
    expected = [json.loads(line) for line in answer.stdout.splitlines()]
    assert len(expected) == len(values)
    wrong = [(v, e, safe_dump(v)) for v, e in zip(values, expected) if safe_dump(v) != e]
    assert not wrong, f"{len(wrong)} differ, e.g. {wrong[0]!r}"
