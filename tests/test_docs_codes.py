"""The manual's generated pages and pictures are what their scripts write now (docs/scripts/: the codes from the
registry and `paictl explain`'s texts, the schema keys, the diagrams), and `paictl --help` shows whole summaries."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

from conftest import ROOT


def script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_codes_page_is_current():
    page = script("codes_page")
    assert page.PAGE.read_text(encoding="utf-8") == page.page(), "run python docs/scripts/codes_page.py"


def test_the_codes_page_explains_every_code():
    from paictl.protocol.codes import CODES
    from paictl.protocol.explanations import EXPLANATIONS

    text = (ROOT / "docs" / "reference" / "codes.md").read_text(encoding="utf-8")
    for code in CODES:
        section = text[text.index(f"\n### {code}\n"):]
        section = section[:section.find("\n### ", 1) if "\n### " in section[1:] else None]
        assert EXPLANATIONS[code][0] in section and f"Fix: {EXPLANATIONS[code][2]}" in section, code


def test_the_schemas_page_is_current():
    page = script("schemas_page")
    assert page.PAGE.read_text(encoding="utf-8") == page.page(), "run python docs/scripts/schemas_page.py"


def test_the_diagrams_are_current():
    diagrams = script("diagrams")
    for name, (title, lanes, arrows) in diagrams.DIAGRAMS.items():
        assert (diagrams.OUT / f"{name}.svg").read_text(encoding="utf-8") == diagrams.draw(title, lanes, arrows), \
            f"run python docs/scripts/diagrams.py ({name})"


@pytest.mark.parametrize("group", [[], ["marketplace"], ["grass"], ["openpai"]], ids=lambda g: " ".join(g) or "paictl")
def test_help_shows_whole_command_summaries(group):
    # Not a terminal, 80 columns: click cuts a summary that does not fit at the first sentence, with "...".
    done = subprocess.run([sys.executable, "-m", "paictl", *group, "--help"], capture_output=True, text=True,
                          timeout=60, env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"})
    commands = done.stdout[done.stdout.index("Commands:"):].splitlines()[1:]
    assert len(commands) >= 3
    for line in commands:
        assert not line.rstrip().endswith("...") and re.match(r"  \S+ +[A-Z].*\.$", line), line


def test_the_editor_links_codes_to_the_codes_page():
    from paictl.lsp.navigation import CODES_URL

    path, _, anchor = CODES_URL.removeprefix("https://github.com/paictl/paictl/blob/main/").partition("#")
    page = (ROOT / path).read_text(encoding="utf-8")
    assert page.startswith("# Diagnostic codes\n") and anchor == "diagnostic-codes"
