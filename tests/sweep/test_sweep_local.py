"""`paictl sweep` on this machine for real (host processes, the local backend): a 3x3 grid with two trials at a
time, metrics and the best trial; Ctrl-C of a real `paictl sweep` then `--resume` without a duplicate; `stop
--sweep`; `status`, `logs` and the Python API."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

HERE = Path(__file__).resolve().parent
SPACE = ('{"lr": {"_type": "choice", "_value": [0.001, 0.01, 0.1]}, '
         '"batch": {"_type": "choice", "_value": [16, 64, 128]}}')


def job_file(tmp_path: Path, *, sleep: float = 0.0, ledger: Path | None = None) -> Path:
    """The sweep test job; each start appends its job name to `ledger` (a record no run folder can overwrite)."""
    text = (HERE / "jobs" / "train.yaml").read_text()
    prefix = ""
    if ledger is not None:
        prefix += f"echo $PAI_JOB_NAME >> {ledger} && "
    if sleep:
        prefix += f"sleep {sleep} && "
    text = text.replace("      - python3 -c", f"      - {prefix}python3 -c")
    path = tmp_path / "train.yaml"
    path.write_text(text)
    (tmp_path / "space.json").write_text(SPACE)
    return path


def paictl(*args: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "paictl", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=env)


def sweep_folder(state: Path, sweep_id: str) -> Path:
    return state.parent / "sweeps" / sweep_id


def sweep_id_of(stderr: str) -> str:
    return stderr.split("paictl: sweep ", 1)[1].split(":", 1)[0]


def records(state: Path, sweep_id: str) -> dict[int, dict]:
    folder = sweep_folder(state, sweep_id) / "trials"
    return {int(p.stem): json.loads(p.read_text()) for p in folder.glob("*.json")}


def test_a_3x3_grid_runs_two_at_a_time_with_metrics_and_the_best_marked(tmp_path, state_home):
    job = job_file(tmp_path)
    done = paictl("sweep", str(job), "--space", str(tmp_path / "space.json"), "--target", "local", "--runtime",
                  "host", "--parallel", "2", "--metric", "loss", "--goal", "min")
    assert done.returncode == 0, done.stderr
    sweep_id = sweep_id_of(done.stderr)
    lines = done.stdout.splitlines()
    table_at = next(i for i, line in enumerate(lines) if line.startswith("TRIAL "))
    assert lines[table_at - 1].startswith(f"sweep {sweep_id}: sweeptrain on local, 9 trial(s): 9 succeeded; "
                                          "best trial 7 (loss=0): lr=0.1 batch=64")
    table = [line.split() for line in lines[table_at + 1:]]
    assert len(table) == 9
    # sorted by loss, the best first and marked: |lr - 0.1| * 100 + |batch - 64|
    expected = sorted((abs(lr - 0.1) * 100 + abs(batch - 64), f"lr={lr}", f"batch={batch}")
                      for lr in (0.001, 0.01, 0.1) for batch in (16, 64, 128))
    assert [(float(row[6]), row[1], row[2]) for row in table] == [pytest.approx(e) for e in expected] or \
        [(pytest.approx(float(row[6])), row[1], row[2]) for row in table] == expected
    assert table[0][-1] == "*" and all(row[-1] != "*" for row in table[1:])
    assert all(row[3] == "succeeded" and row[5] == "0" for row in table)
    # never more than two trials at once, and two at some point (intervals from the record)
    spans = [(r["submitted_at"], r["ended_at"]) for r in records(state_home, sweep_id).values()]
    assert len(spans) == 9
    overlap = max(sum(1 for start, end in spans if start <= t < end) for t, _ in spans)
    assert overlap == 2
    # every trial ran once, as its own local run
    runs = sorted(p.name for p in state_home.iterdir() if p.is_dir())
    assert runs == sorted(f"sweeptrain-{sweep_id}-{n}" for n in range(9))

    status = paictl("status", "--sweep", sweep_id, "-o", "json")
    data = json.loads(status.stdout)
    assert status.returncode == 0 and data["done"] and data["best"] == 7 and len(data["trials"]) == 9
    logs = paictl("logs", "--sweep", sweep_id, "--trial", "7")
    assert logs.returncode == 0 and logs.stdout.splitlines()[-2:] == ["loss=0", "[paictl] train-0: exited 0"] or \
        "loss=0" in logs.stdout
    missing = paictl("logs", "--sweep", sweep_id, "--trial", "9")
    assert missing.returncode == 2 and "trials 0 to 8" in missing.stderr


def test_ctrl_c_then_resume_finishes_without_a_duplicate(tmp_path, state_home):
    ledger = tmp_path / "ledger"
    job = job_file(tmp_path, sleep=1.5, ledger=ledger)
    process = subprocess.Popen([sys.executable, "-m", "paictl", "sweep", str(job), "--space",
                                str(tmp_path / "space.json"), "--target", "local", "--runtime", "host",
                                "--parallel", "2", "--metric", "loss", "--goal", "min"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    sweeps = state_home.parent / "sweeps"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = list(sweeps.glob("*/trials/*.json")) if sweeps.is_dir() else []
        if len(found) >= 3:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    sweep_id = sweep_id_of(err)
    assert f"paictl sweep --resume {sweep_id}" in err
    before = records(state_home, sweep_id)
    assert 3 <= len(before) < 9

    resumed = paictl("sweep", "--resume", sweep_id)
    assert resumed.returncode == 0, resumed.stderr
    assert "9 succeeded" in resumed.stdout and "best trial 7" in resumed.stdout
    after = records(state_home, sweep_id)
    assert sorted(after) == list(range(9)) and all(r["state"] == "succeeded" for r in after.values())
    for index, record in before.items():  # what was submitted before Ctrl-C kept its submission
        assert after[index]["submitted_at"] == record["submitted_at"]
    started = ledger.read_text().split()
    assert sorted(started) == sorted(f"paictl~sweeptrain-{sweep_id}-{n}" for n in range(9))  # each exactly once
    again = paictl("sweep", "--resume", sweep_id)  # a finished sweep resumes to its verdict, submitting nothing
    assert again.returncode == 0 and len(ledger.read_text().split()) == 9


def test_stop_sweep_stops_the_running_trial_and_the_pending_ones_never_start(tmp_path, state_home):
    ledger = tmp_path / "ledger"
    job = job_file(tmp_path, sleep=60, ledger=ledger)
    process = subprocess.Popen([sys.executable, "-m", "paictl", "sweep", str(job), "--space", "lr=0.1,0.2,0.3",
                                "--target", "local", "--runtime", "host", "--parallel", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (ledger.exists() and ledger.read_text().strip()):
        time.sleep(0.05)
    sweep_id = next(p for p in (state_home.parent / "sweeps").iterdir() if p.is_dir()).name
    stopped = paictl("stop", "--sweep", sweep_id)
    assert stopped.returncode == 0, stopped.stderr
    assert f"sweeptrain-{sweep_id}-0: stopped" in stopped.stdout
    out, err = process.communicate(timeout=60)
    assert process.returncode == 4, err
    status = json.loads(paictl("status", "--sweep", sweep_id, "-o", "json").stdout)
    assert [t["state"] for t in sorted(status["trials"], key=lambda t: t["trial"])] == \
        ["stopped", "cancelled", "cancelled"]
    assert ledger.read_text().split() == [f"paictl~sweeptrain-{sweep_id}-0"]
    assert sorted(p.name for p in state_home.iterdir() if p.is_dir()) == [f"sweeptrain-{sweep_id}-0"]


def test_stop_when_ends_the_sweep_once_a_trial_meets_it(tmp_path, state_home):
    job = job_file(tmp_path)
    done = paictl("sweep", str(job), "--space", "lr=0.1,0.01,0.001", "--space", "batch=64", "-t", "local",
                  "--runtime", "host", "--metric", "loss", "--stop-when", "loss<1", "-o", "json")
    assert done.returncode == 0, done.stderr
    final = json.loads(done.stdout.splitlines()[-1])
    assert final["kind"] == "sweep" and final["stopped"].startswith("--stop-when loss<1 met by trial 0")
    assert [t["state"] for t in final["trials"]] == ["succeeded", "cancelled", "cancelled"]


def test_a_sweep_id_that_names_no_sweep_is_one_line(tmp_path, state_home):
    for given, code in (("nosuch", 3), ("../etc", 2)):
        done = paictl("status", "--sweep", given)
        assert done.returncode == code and len(done.stderr.splitlines()) == 1, done.stderr


def test_an_invalid_space_submits_nothing(tmp_path, state_home):
    job = job_file(tmp_path)
    (tmp_path / "bad.json").write_text('{\n  "lr": {"_type": "choice", "_value": [0.1]},\n  "bacth": {"_type": '
                                       '"choice", "_value": [1]}\n}\n')
    done = paictl("sweep", str(job), "--space", str(tmp_path / "bad.json"), "-t", "local", "--runtime", "host")
    assert done.returncode == 1
    assert f"{tmp_path / 'bad.json'}:3:3: error[E851]: 'bacth' is not a parameter of the job" in done.stderr
    assert "did you mean 'batch'?" in done.stderr and "Traceback" not in done.stderr
    assert not state_home.exists() or not any(state_home.iterdir())
    assert not (state_home.parent / "sweeps").exists()


def test_the_python_api_returns_trial_handles(tmp_path, state_home):
    import paictl

    job = job_file(tmp_path)
    sweep = paictl.sweep(job, {"lr": {"_type": "choice", "_value": [0.1, 0.01]}}, backend="local", metric="loss",
                         goal="min", parallel=2, extra={"runtime": "host"})
    try:
        assert [trial.name for trial in sweep.trials] == [f"sweeptrain-{sweep.id}-{n}" for n in range(2)]
        assert [trial.parameters for trial in sweep.trials] == [{"lr": 0.1}, {"lr": 0.01}]
        final = sweep.run()
        assert final.done and final.best.index == 0
        assert [trial.metric for trial in sweep.trials] == [32.0, 41.0]
        assert sweep.trials[1].describe().state.value == "succeeded"
        assert any("loss=41" in line.text for line in sweep.trials[1].logs().lines)
    finally:
        sweep.close()


def test_resume_refuses_a_job_file_that_changed(tmp_path, state_home):
    import paictl as api

    job = job_file(tmp_path)
    sweep = api.sweep(job, ["lr=0.1,0.2"], backend="local", extra={"runtime": "host"})
    sweep.close()
    assert not state_home.exists() or not any(state_home.iterdir())  # recorded, nothing submitted yet
    job.write_text(job.read_text().replace("epoch 1", "epoch one"))
    done = paictl("sweep", "--resume", sweep.id)
    assert done.returncode == 2 and "changed since sweep" in done.stderr and len(done.stderr.splitlines()) == 1
    assert not state_home.exists() or not any(state_home.iterdir())


def test_an_edited_sweep_record_is_one_line_never_a_traceback(tmp_path, state_home):
    import paictl as api

    sweep = api.sweep(job_file(tmp_path), ["lr=0.1,0.2"], backend="local", extra={"runtime": "host"})
    sweep.close()
    folder = sweep_folder(state_home, sweep.id)
    (folder / "trials" / "0.json").write_text('{"index": 0, "phase": "sideways"}')
    done = paictl("status", "--sweep", sweep.id)
    assert done.returncode == 3 and len(done.stderr.splitlines()) == 1 and "not one paictl wrote" in done.stderr
    (folder / "trials" / "0.json").unlink()
    (folder / "sweep.json").write_text('{"trials": [{"index": 0}]}')
    done = paictl("sweep", "--resume", sweep.id)
    assert done.returncode == 3 and len(done.stderr.splitlines()) == 1 and "not one paictl wrote" in done.stderr
