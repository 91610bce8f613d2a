"""The editor features on every hostile shape of tests/hostile_shapes.py (2 MiB files: one long line, 500,000 list
items, deep nesting, unclosed placeholders...): each answers, never raises. The cursor and name scanning they
share is linear in a line's length (a backtracking pattern took hours on one 2 MiB line before)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hostile_shapes import SHAPES  # noqa: E402

from paictl.lsp import completion, navigation  # noqa: E402
from paictl.protocol.loading import source_lines  # noqa: E402
from paictl.protocol.source import MAX_FILE_BYTES  # noqa: E402


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_cursor_features_answer_on_hostile_text(shape):
    text = shape.build(MAX_FILE_BYTES)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = source_lines(text) or [""]
    for line in {len(lines) // 2, len(lines) - 1}:
        for column in {0, len(lines[line])}:
            assert isinstance(completion.complete(lines, line, column, None), list)
            navigation.definition(lines, line, column, None)
            navigation.key_hover(lines, line, column, None)


def test_fixing_a_typo_among_10000_task_roles():
    from paictl.lsp.analysis import validate_document
    from paictl.protocol.fixes import fix_text

    (shape,) = [s for s in SHAPES if s.name == "roles-10000-one-typo"]
    text = shape.build(MAX_FILE_BYTES)
    outcome = fix_text(text, "roles.yaml", validate_document)
    assert [f.diagnostic.code for f in outcome.applied] == ["E202"]
    assert outcome.text == text.replace("    instancez: 1\n", "    instances: 1\n", 1)
