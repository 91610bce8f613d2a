"""`paictl diagnose` on failures OpenPAI's exit rules call 255 (unknown): the verdict stays OpenPAI's, and hints say
what the log points at."""

from __future__ import annotations

import json

import pytest

MISSING_MODULE = ("Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n"
                  "    import torchvision\nModuleNotFoundError: No module named 'torchvision'\n")
CUDA_OOM = ("epoch 1\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB "
            "total capacity)\n")


@pytest.mark.parametrize("log, first_hint, line", [
    (MISSING_MODULE, "missing Python module", 4),
    (CUDA_OOM, "GPU out of memory", 2),
    ("java.lang.OutOfMemoryError: Java heap space\n", "host out of memory", 1),
    ("cat: /data/train.csv: No such file or directory\n", "file not found", 1),
])
def test_unknown_failures_keep_255_and_get_a_hint(run_cli, tmp_path, log, first_hint, line):
    path = tmp_path / "task.log"
    path.write_text(log)
    code, out, _ = run_cli("diagnose", "--exit-code", "1", "--log", str(path), "-o", "json")
    report = json.loads(out)
    assert code == 0 and (report["code"], report["phrase"]) == (255, "PAIRuntimeUnknownFailed")  # as upstream's
    assert report["hints"][0]["name"] == first_hint and report["hints"][0]["line"] == line
    assert report["hints"][0]["text"] == log.splitlines()[line - 1].strip()
    _, text, _ = run_cli("diagnose", "--exit-code", "1", "--log", str(path))
    assert "unknown to OpenPAI's exit rules too" in text and f"hint:      {first_hint} (user log line {line}:" in text


def test_a_recognised_failure_or_a_success_gets_no_hint(run_cli, tmp_path):
    path = tmp_path / "task.log"
    path.write_text('  File "train.py", line 3\n    print "x"\nSyntaxError: invalid syntax\n' + MISSING_MODULE)
    report = json.loads(run_cli("diagnose", "--exit-code", "1", "--log", str(path), "-o", "json")[1])
    assert report["code"] == 231 and report["hints"] == []
    report = json.loads(run_cli("diagnose", "--exit-code", "0", "--log", str(path), "-o", "json")[1])
    assert report["hints"] == []
    _, text, _ = run_cli("diagnose", "--exit-code", "1")
    assert "hint:" not in text
