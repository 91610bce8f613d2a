"""The search space (issue 44): NNI's format read and checked against the job with located diagnostics, and the
trials each strategy draws from it, with each type sampled as NNI documents it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from paictl.compiler.trials import MAX_TRIALS, grid_size, parameters_used, sample, trials
from paictl.errors import InvalidJobError, UsageError
from paictl.protocol import load_job
from paictl.protocol.searchspace import Dimension, check_space_text
from paictl.targets.sweep.metrics import metric_of, parse_stop_when
from paictl.targets.sweep.prepare import read_space, trial_name

HERE = Path(__file__).resolve().parent
MNIST = load_job(HERE / "jobs" / "nni-mnist.yaml")
TRAIN = load_job(HERE / "jobs" / "train.yaml")


def space_of(text: str, job=TRAIN, *, strategy=None, name="space.json"):
    return check_space_text(text, name, parameters=job.parameters, used=parameters_used(job), strategy=strategy)


@pytest.mark.parametrize("name", ["nni-mnist.json", "every-type.json", "every-type.yaml"])
def test_nni_example_spaces_validate_against_their_job(name):
    path = HERE / "spaces" / name
    space, diagnostics = check_space_text(path.read_text(), str(path), parameters=MNIST.parameters,
                                          used=parameters_used(MNIST), strategy="random")
    assert diagnostics == [] and space is not None
    assert list(space.names) == list(json.loads(path.read_text()) if name.endswith(".json") else
                                     ["learning_rate", "momentum", "conv_size", "epochs"])


def test_every_type_samples_as_nni_documents_it():
    path = HERE / "spaces" / "every-type.json"
    space, _ = check_space_text(path.read_text(), str(path), parameters=MNIST.parameters, used=None,
                                strategy="random")
    drawn = trials(space, strategy="random", seed=11, max_trials=2000)
    column = {name: [row[name] for row in drawn] for name in space.names}
    assert all(1e-5 <= v <= 1e-1 for v in column["learning_rate"])            # loguniform [low, high]
    logs = [math.log10(v) for v in column["learning_rate"]]                   # uniform in the exponent
    assert sum(1 for v in logs if v < -3) == pytest.approx(1000, rel=0.15)
    assert all(0 <= v <= 1 for v in column["momentum"])                       # uniform
    assert all(isinstance(v, int) and 5 <= v < 50 for v in column["epochs"])  # randint [lower, upper)
    assert {5, 49} <= set(column["epochs"]) and 50 not in column["epochs"]
    assert all(isinstance(v, int) and v % 50 == 0 and 0 <= v <= 1000 for v in column["warmup"])  # quniform, clipped
    assert {0, 1000} <= set(column["warmup"])
    assert all(1e-6 <= v <= 1e-2 for v in column["weight_decay"])              # qloguniform, clipped
    assert all(abs(v / 1e-6 - round(v / 1e-6)) < 1e-6 for v in column["weight_decay"])
    noise = column["noise"]                                                   # normal(mu, sigma)
    assert sum(noise) / len(noise) == pytest.approx(0, abs=0.01)
    assert (sum(v * v for v in noise) / len(noise)) ** 0.5 == pytest.approx(0.1, rel=0.1)
    assert all(v > 0 for v in column["scale"])                                # lognormal = exp(normal)
    assert sorted(column["scale"])[1000] == pytest.approx(1.0, rel=0.15)       # its median is exp(mu)
    assert all(abs(v / 0.05 - round(v / 0.05)) < 1e-9 for v in column["dropout_rate"])  # qnormal, unclipped
    assert all(isinstance(v, int) and v % 8 == 0 and v >= 0 for v in column["width"])   # qlognormal


def test_a_seed_draws_the_same_trials_twice_and_another_seed_others():
    path = HERE / "spaces" / "nni-mnist.json"
    space, _ = check_space_text(path.read_text(), str(path), parameters=MNIST.parameters, used=None,
                                strategy="random")
    first = trials(space, strategy="random", seed=42, max_trials=20)
    assert first == trials(space, strategy="random", seed=42, max_trials=20)
    assert first != trials(space, strategy="random", seed=43, max_trials=20)
    assert len(first) == 20 and all(set(row) == set(space.names) for row in first)


def test_grid_is_every_combination_the_last_parameter_fastest():
    space, diagnostics = space_of('{"lr": {"_type": "choice", "_value": [0.1, 0.01, 0.001]},\n'
                                  ' "batch": {"_type": "quniform", "_value": [16, 64, 24]}}')
    assert diagnostics == []
    assert grid_size(space) == 9
    rows = trials(space, strategy="grid")  # clip(round(x / 24) * 24, 16, 64) for x in [16, 64]: 24, 48, 64
    assert rows[:3] == [{"lr": 0.1, "batch": 24}, {"lr": 0.1, "batch": 48}, {"lr": 0.1, "batch": 64}]
    assert len({json.dumps(row, sort_keys=True) for row in rows}) == 9
    assert trials(space, strategy="grid", max_trials=4) == rows[:4]


def test_grid_of_quantized_and_randint_values():
    assert list(trials_of({"_type": "randint", "_value": [2, 5]})) == [2, 3, 4]
    # clip(round(x / q) * q, low, high) over [low, high]: the bounds themselves, then the multiples of q between
    assert list(trials_of({"_type": "quniform", "_value": [0.05, 0.3, 0.1]})) == [0.05, 0.1, 0.2, 0.3]
    assert list(trials_of({"_type": "qloguniform", "_value": [1, 100, 25]})) == [1, 25, 50, 75, 100]


def test_grid_runs_each_parameter_set_once_as_nni_does():
    """NNI's grid search skips a parameter set it has generated (its history): a repeated choice is one trial."""
    space, _ = space_of('{"lr": {"_type": "choice", "_value": [0.1, 0.2, 0.1]},\n'
                        ' "optimizer": {"_type": "choice", "_value": ["sgd", "adam", "sgd"]}}')
    assert grid_size(space) == 4
    rows = trials(space, strategy="grid")
    assert [(row["lr"], row["optimizer"]) for row in rows[:3]] == [(0.1, "sgd"), (0.1, "adam"), (0.2, "sgd")]
    assert len({json.dumps(row, sort_keys=True) for row in rows}) == len(rows) == 4


def trials_of(spec):
    space, diagnostics = space_of(json.dumps({"batch": spec}))
    assert not [d for d in diagnostics if d.is_error], diagnostics
    return [row["batch"] for row in trials(space, strategy="grid")]


def test_a_huge_grid_needs_max_trials():
    space, _ = space_of('{"batch": {"_type": "randint", "_value": [0, 20000]}}')
    with pytest.raises(UsageError, match="--max-trials"):
        trials(space, strategy="grid")
    assert len(trials(space, strategy="grid", max_trials=MAX_TRIALS)) == MAX_TRIALS
    with pytest.raises(UsageError, match="--max-trials"):  # never a billion trials drawn into memory
        trials(space, strategy="random", max_trials=10 ** 9)
    with pytest.raises(UsageError, match="--max-trials"):
        trials(space, strategy="random")


def test_list_rows_are_the_trials():
    space, diagnostics = space_of('{"_rows": [{"lr": 0.1, "batch": 16}, {"lr": 0.2}]}')
    assert diagnostics == []
    assert trials(space, strategy="list") == [{"lr": 0.1, "batch": 16}, {"lr": 0.2}]


def located(text, **options):
    space, diagnostics = space_of(text, **options)
    return space, [(d.line, d.column, d.code, d.message, d.hint) for d in diagnostics]


def test_an_unknown_parameter_is_located_with_did_you_mean():
    space, found = located('{\n  "lr": {"_type": "choice", "_value": [0.1]},\n'
                           '  "bacth": {"_type": "choice", "_value": [16]}\n}')
    assert space is None
    assert found == [(3, 3, "E851", "'bacth' is not a parameter of the job (its parameters: lr, batch, optimizer)",
                      "did you mean 'batch'?")]


def test_a_parameter_no_command_uses_is_a_warning():
    space, found = located('{"optimizer": {"_type": "choice", "_value": ["sgd", "adam"]}}')
    assert space is not None
    assert [(line, column, code) for line, column, code, *_ in found] == [(1, 2, "W852")]


def test_parameters_used_reads_the_rendered_commands_and_deployments():
    assert parameters_used(TRAIN) == {"lr", "batch"}
    job = load_job(Path(__file__).resolve().parents[2] / "examples" / "parameter-server.yaml")
    assert parameters_used(job) == {"epochs", "learningRate", "dataset"}


@pytest.mark.parametrize("spec, where, wording", [
    ('{"optimizer": {"_type": "uniform", "_value": [16, 64]}}', (1, 25), "uniform gives numbers"),
    ('{"batch": {"_type": "choice", "_value": [16, "big"]}}', (1, 46), 'string "big" does not fit'),
    ('{"lr": {"_type": "choice", "_value": [0.1, true]}}', (1, 44), "boolean true does not fit"),
    ('{"optimizer": {"_type": "choice", "_value": [["a"]]}}', (1, 46), 'list ["a"] does not fit'),
    ('{"optimizer": {"_type": "randint", "_value": [1, 3]}}', (1, 25), "randint gives integers"),
])
def test_a_value_that_does_not_fit_the_default_is_an_error(spec, where, wording):
    space, found = located(spec)
    assert space is None
    errors = [f for f in found if f[2] == "E853"]
    assert len(errors) == 1 and errors[0][:2] == where and wording in errors[0][3], found


@pytest.mark.parametrize("spec, wording", [
    ('{"lr": {"_type": "loguniform", "_value": [0, 0.1]}}', "low must be above 0"),
    ('{"lr": {"_type": "uniform", "_value": [0.2, 0.1]}}', "needs low < high"),
    ('{"batch": {"_type": "randint", "_value": [5, 5]}}', "holds no integer"),
    ('{"lr": {"_type": "qnormal", "_value": [0, 1, 0]}}', "needs q > 0"),
    ('{"lr": {"_type": "normal", "_value": [0, -1]}}', "needs sigma > 0"),
    # draws that overflow a float: `Infinity` given to a command, or an OverflowError traceback mid-sweep
    ('{"lr": {"_type": "uniform", "_value": [-1e308, 1e308]}}', "beyond the largest float"),
    ('{"lr": {"_type": "normal", "_value": [0, 1e308]}}', "beyond the largest float"),
    ('{"lr": {"_type": "lognormal", "_value": [1000, 1]}}', "exp overflows"),
    ('{"lr": {"_type": "qlognormal", "_value": [700, 1, 1]}}', "exp overflows"),
    ('{"lr": {"_type": "quniform", "_value": [0, 1e10, 1e-300]}}', "q is too small"),
    ('{"lr": {"_type": "qloguniform", "_value": [1e-300, 1e300, 1e-10]}}', "q is too small"),
])
def test_a_distribution_that_samples_nothing_or_overflows_is_an_error(spec, wording):
    space, found = located(spec, strategy="random")
    assert space is None and [f[2] for f in found] == ["E854"] and wording in found[0][3]


def test_a_wide_distribution_that_cannot_overflow_samples():
    space, found = located('{"lr": {"_type": "lognormal", "_value": [0, 70]}}', strategy="random")
    assert found == [] and all(math.isfinite(row["lr"]) for row in trials(space, strategy="random", seed=3,
                                                                             max_trials=500))


def test_the_first_trials_of_a_grid_with_a_long_axis_come_at_once():
    """itertools.product lists every axis before its first combination: 10**12 values never came back."""
    space, _ = space_of('{"batch": {"_type": "randint", "_value": [0, 1000000000000]},\n'
                        ' "lr": {"_type": "quniform", "_value": [0, 1e300, 1e-5]}}')
    assert trials(space, strategy="grid", max_trials=3) == [{"batch": 0, "lr": 0}, {"batch": 0, "lr": 0.00001},
                                                           {"batch": 0, "lr": 0.00002}]
    with pytest.raises(UsageError, match=r"about 10\^316 trials"):
        trials(space, strategy="grid")


def test_grid_refuses_continuous_types_located():
    space, found = located('{"lr": {"_type": "loguniform", "_value": [0.001, 0.1]}}')
    assert space is None and found[0][:3] == (1, 18, "E855") and "random" in found[0][4]
    space, found = located('{"lr": {"_type": "loguniform", "_value": [0.001, 0.1]}}', strategy="random")
    assert space is not None and found == []


def test_schema_problems_are_located_with_hints():
    space, found = located('{"lr": {"_type": "loguniformm", "_value": [0.001, 0.1]},\n'
                           ' "batch": {"_type": "quniform", "_value": [1, 2]}}')
    assert space is None
    assert [(line, code) for line, _, code, *_ in found] == [(1, "E204"), (2, "E207")]
    assert found[0][4] == "did you mean 'loguniform'?"


def test_a_broken_file_is_located():
    space, found = located('{"lr": {"_type": "choice", "_value": [0.1,\n')
    assert space is None and found[0][2] == "E101" and found[0][0] in (1, 2)


@pytest.mark.parametrize("content, code, where", [
    (b'{"lr": {"_type": "choice", "_value": [0.1]}}\n# caf\xe9\n', "E100", (2, 6)),  # Latin-1, not UTF-8
    (b"#" * (2 * 1024 * 1024 + 1), "E107", (None, None)),  # past the size limit of a job file
], ids=["not-utf-8", "too-large"])
def test_a_space_file_that_is_not_text_is_its_located_error_not_a_traceback(tmp_path, content, code, where):
    path = tmp_path / "space.json"
    path.write_bytes(content)
    with pytest.raises(InvalidJobError) as refused:
        read_space([str(path)], parameters=TRAIN.parameters, used=None, strategy=None)
    (diagnostic,) = refused.value.diagnostics
    assert (diagnostic.file, diagnostic.code, (diagnostic.line, diagnostic.column)) == (str(path), code, where)


def test_command_line_choices_and_a_file_combine(tmp_path):
    path = tmp_path / "space.yaml"
    path.write_text("lr: {_type: choice, _value: [0.1, 0.2]}\nbatch: {_type: choice, _value: [1]}\n")
    space, _ = read_space([str(path), "batch=16,32,64"], parameters=TRAIN.parameters, used=None, strategy=None)
    assert [(d.name, d.arguments) for d in space.dimensions] == [("lr", (0.1, 0.2)), ("batch", (16, 32, 64))]
    with pytest.raises(InvalidJobError) as refused:
        read_space(["bach=1,2"], parameters=TRAIN.parameters, used=None, strategy=None)
    (diagnostic,) = refused.value.diagnostics
    assert (diagnostic.file, diagnostic.code, diagnostic.hint) == ("--space", "E851", "did you mean 'batch'?")


def test_trial_names_stay_within_the_name_rules():
    assert trial_name("mnist", "ab12cd", 3) == "mnist-ab12cd-3"
    assert len(trial_name("x" * 255, "ab12cd", 12345)) == 200


def test_quantized_integers_stay_integers_and_floats_are_tidy():
    assert sample(Dimension(name="q", kind="quniform", arguments=(0, 1, 0.1)), __import__("random").Random(1)) in \
        [round(0.1 * k, 10) for k in range(11)]


def test_the_metric_is_the_last_number_printed_for_its_name():
    assert metric_of(["loss=3", "step 2 loss=2.5 acc=0.9", "val_loss=0.1", "done"], "loss") == 2.5
    assert metric_of(['{"loss": 0.25, "step": 9}', "nothing"], "loss") == 0.25
    assert metric_of(['{"loss": true}'], "loss") is None
    assert metric_of(["LOSS = 1e-3"], "loss") == 0.001
    assert metric_of(["no metric here"], "loss") is None


def test_stop_when_conditions():
    condition = parse_stop_when("metric<0.1", "loss")
    assert condition.met(0.05) and not condition.met(0.1) and not condition.met(None)
    assert parse_stop_when("loss >= 2", "loss").met(2)
    with pytest.raises(UsageError):
        parse_stop_when("accuracy<1", "loss")
    with pytest.raises(UsageError):
        parse_stop_when("metric<0.1", None)


def test_the_live_table_marks_the_best_on_a_terminal(capsys):
    from paictl.cli.sweep import draw
    from paictl.targets.sweep.runner import sweep_view

    definition = {"id": "ab12cd", "job": {"name": "sweeptrain"}, "target": "local", "metric": "loss", "goal": "min",
                  "trials": [{"index": n, "name": f"sweeptrain-ab12cd-{n}", "parameters": {"lr": lr}}
                             for n, lr in enumerate((0.1, 0.01))]}
    records = {0: {"phase": "done", "name": "x", "state": "succeeded", "exit_code": 0, "metric": 2.0,
                   "submitted_at": 0.0, "ended_at": 3.0},
               1: {"phase": "done", "name": "y", "state": "succeeded", "exit_code": 0, "metric": 1.0,
                   "submitted_at": 0.0, "ended_at": 75.0}}
    views = [sweep_view(definition, {0: records[0]}, stopped=None, now=5.0),
             sweep_view(definition, records, stopped=None, now=80.0, done=True)]
    last = draw(iter(views), live=True)
    out = capsys.readouterr().out
    assert last.best.index == 1 and [row.index for row in last.rows] == [1, 0]
    assert "best trial 1" in " ".join(out.split()) and "1m15s" in out and "LOSS" in out
    row = next(line for line in out.splitlines() if "lr=0.01" in line and "succeeded" in line)
    assert row.rstrip(" │|").endswith("*")


def test_a_space_alone_gets_its_own_problems_checked():
    """What an editor can say of a space file without its job (no E851-E853, which need the job)."""
    text = '{"lr": {"_type": "loguniform", "_value": [0, 1]},\n "whatever": {"_type": "choice", "_value": ["a"]}}'
    space, diagnostics = check_space_text(text, "s.json", parameters=None, used=None, strategy="random")
    assert space is None and [(d.line, d.code) for d in diagnostics] == [(1, "E854")]
