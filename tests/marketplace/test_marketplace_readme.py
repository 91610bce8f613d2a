"""The marketplace Python example of docs/how-to/marketplace.md runs as written."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

from marketplace_helpers import EXAMPLE_ITEMS, ROOT


def test_the_readme_marketplace_example_runs(tmp_path):
    section = (ROOT / "docs" / "how-to" / "marketplace.md").read_text(encoding="utf-8")
    example = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shutil.copytree(EXAMPLE_ITEMS, tmp_path / "examples" / "marketplace")
    done = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "created queue-smoke-test Check that a virtual cluster schedules CPU jobs\n"
    assert (tmp_path / "shared-index" / "index.json").is_file()
