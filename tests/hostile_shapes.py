"""A generator of hostile job files, one per shape class of issue 13, each as large as the 2 MiB limit allows, and
the child-process runner that measures what `paictl` spends on them (CPU seconds, peak RSS, address space).

Used by tests/test_hostile_bounds.py (the bounds as assertions) and runnable on its own to print the figures the
README's "Hostile input" section quotes:

    python tests/hostile_shapes.py            # every shape x every command, a table sorted by CPU time
    python tests/hostile_shapes.py many-keys  # only shapes whose name contains this

Every shape is a function of a byte budget returning text of at most that many UTF-8 bytes; the budget is the
file-size limit unless the shape is about the limit itself. Shapes are built by repetition, so they cost
milliseconds to generate and are identical on every run.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from paictl.protocol.source import MAX_FILE_BYTES

# -- job pieces ------------------------------------------------------------------------------------------------------

HEAD = "protocolVersion: 2\nname: hostile\ntype: job\nprerequisites:\n  - {type: dockerimage, name: img, uri: ubuntu}\n"
ROLE = ("  r{i}:\n    instances: 1\n    dockerImage: img\n    resourcePerInstance:\n      cpu: 1\n      memoryMB: 100\n"
        "      gpu: 0\n    commands:\n      - echo hi\n")
ONE_ROLE = "taskRoles:\n" + ROLE.format(i=0)
JOB = HEAD + ONE_ROLE


def _fill(budget: int, head: str, item: Callable[[int], str], tail: str = "") -> str:
    """head + item(0) + item(1) + ... + tail, as many items as fit in `budget` bytes."""
    parts, used, index = [head], len(head.encode()) + len(tail.encode()), 0
    while True:
        piece = item(index)
        size = len(piece.encode())
        if used + size > budget:
            break
        parts.append(piece)
        used += size
        index += 1
    parts.append(tail)
    return "".join(parts)


def _repeat(budget: int, head: str, unit: str, tail: str = "") -> str:
    """head + unit * n + tail within `budget` bytes (for units without an index: fast even for 1M repeats)."""
    room = budget - len(head.encode()) - len(tail.encode())
    return head + unit * max(0, room // len(unit.encode())) + tail


def _nested_mappings(budget: int) -> str:
    # Each level costs its indentation: 2 MiB holds about 1,400 levels.
    return _fill(budget, "", lambda i: "  " * i + "k:\n")


def _roles(budget: int, typo: bool = False, count: int | None = None) -> str:
    if count is None:
        text = _fill(budget, HEAD + "taskRoles:\n", lambda i: ROLE.format(i=i))
    else:
        text = HEAD + "taskRoles:\n" + "".join(ROLE.format(i=i) for i in range(count))
    if typo:
        text = text.replace("    instances: 1\n", "    instancez: 1\n", 1)
    return text


def _alias_of_big_scalar(budget: int) -> str:
    big = "x" * (budget // 2)
    return _repeat(budget, f"a: &a {big}\nb: [*a", ", *a", "]\n")


def _alias_bomb(budget: int) -> str:
    lines = ["a: &a [l, l, l, l, l, l, l, l, l]\n"]
    for i in range(20):
        lines.append(f"a{i}: &a{i} [{', '.join(['*' + ('a' if i == 0 else f'a{i - 1}')] * 9)}]\n")
    return "".join(lines)


def _merge_chain(budget: int) -> str:
    # Each mapping merges the previous one and adds a key: expanded size grows quadratically with the chain.
    return _fill(budget, "m0: &m0 {k0: v}\n", lambda i: f"m{i + 1}: &m{i + 1} {{<<: *m{i}, k{i + 1}: v}}\n")


def _merge_fan(budget: int) -> str:
    # One mapping merging a 1,000-key mapping many times over.
    base = "base: &b {" + ", ".join(f"k{i}: v" for i in range(1000)) + "}\n"
    return _repeat(budget, base + "m: {<<: [*b", ", *b", "]}\n")


def _deep_merges(budget: int) -> str:
    # Merges nested as deep as the depth limit allows, each level merging an anchored mapping.
    head = "base: &b {x: 1, y: 2}\n"
    return head + "".join("  " * i + "k:\n" + "  " * (i + 1) + "<<: *b\n" for i in range(99))


def _sexagesimal(budget: int) -> str:
    return _repeat(budget, "a: 1", ":59", "\n")


def _huge_numbers(budget: int) -> str:
    return _fill(budget, "", lambda i: f"n{i}: {'9' * 4299}\n")


def _huge_floats(budget: int) -> str:
    return _fill(budget, "", lambda i: f"f{i}: 1.{'9' * 4290}e9\n")


CONTROLS = "".join(chr(c) for c in (*range(0x01, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F,
                                         *range(0x80, 0xA0), 0x202E, 0x2066, 0x200F))


def _controls_in_values(budget: int) -> str:
    # Double-quoted escapes put every C0/C1/bidi character into values and keys (raw ones are a YAML error).
    escaped = "".join(f"\\u{ord(c):04x}" for c in CONTROLS)
    return _fill(budget, JOB, lambda i: f'"k{i}{escaped[:48]}": "{escaped}"\n')


def _controls_raw(budget: int) -> str:
    return _repeat(budget, "a: ", "b\x85c\u2028d\u202ee\u2066f\x9bg", "\n")


def _controls_in_command(budget: int) -> str:
    escaped = "".join(f"\\u{ord(c):04x}" for c in CONTROLS)
    return _repeat(budget, HEAD + "taskRoles:\n  a:\n    instances: 1\n    dockerImage: img\n"
                   "    resourcePerInstance: {cpu: 1, memoryMB: 100, gpu: 0}\n    commands:\n", f"      - \"{escaped}\"\n")


def _placeholders(budget: int) -> str:
    return _repeat(budget, HEAD + "parameters:\n  x: 1\ntaskRoles:\n  a:\n    instances: 1\n    dockerImage: img\n"
                   "    resourcePerInstance: {cpu: 1, memoryMB: 100, gpu: 0}\n    commands:\n      - \"",
                   "<% $parameters.x %>", "\"\n")


def _unknown_placeholders(budget: int) -> str:
    return _fill(budget, HEAD + "taskRoles:\n  a:\n    instances: 1\n    dockerImage: img\n"
                 "    resourcePerInstance: {cpu: 1, memoryMB: 100, gpu: 0}\n    commands:\n",
                 lambda i: f"      - echo <% $parameters.p{i} %>\n")


def _unclosed_placeholders(budget: int) -> str:
    return _repeat(budget, HEAD + "taskRoles:\n  a:\n    instances: 1\n    dockerImage: img\n"
                   "    resourcePerInstance: {cpu: 1, memoryMB: 100, gpu: 0}\n    commands:\n      - \"", "<% ", "\"\n")


def _many_secrets_with_errors(budget: int) -> str:
    # Every diagnostic is redacted against every secret value: 50,000 secrets times 1,000 reported problems.
    secrets = "secrets:\n" + "".join(f"  s{i}: secretvalue{i}\n" for i in range(50_000))
    return _fill(budget, JOB + secrets, lambda i: f"u{i}: 1\n")


def _many_parameters(budget: int) -> str:
    return _fill(budget, JOB + "parameters:\n", lambda i: f"  p{i}: {i}\n")


def _many_ports(budget: int) -> str:
    return _fill(budget, HEAD + "taskRoles:\n  a:\n    instances: 1\n    dockerImage: img\n"
                 "    resourcePerInstance:\n      cpu: 1\n      memoryMB: 100\n      gpu: 0\n      ports:\n",
                 lambda i: f"        p{i}: {i % 60000 + 1}\n", "    commands: [echo]\n")


def _many_documents(budget: int) -> str:
    return _repeat(budget, "a: 1\n", "---\na: 1\n")


def _long_key(budget: int) -> str:
    return JOB + "k" * (budget - len(JOB) - 8) + ": 1\n"


def _many_long_keys(budget: int) -> str:
    return _fill(budget, JOB, lambda i: f"{i:06d}" + "k" * 1018 + ": 1\n")


def _many_role_keys(budget: int) -> str:
    # 100,000 unknown keys inside one task role: many diagnostics at depth (capped at 1,000 by W101).
    return _fill(budget, JOB, lambda i: f"    u{i}: 1\n").replace(JOB, HEAD + "taskRoles:\n  r0:\n    instances: 1\n"
                                                                  "    dockerImage: img\n    resourcePerInstance: "
                                                                  "{cpu: 1, memoryMB: 100, gpu: 0}\n    commands: "
                                                                  "[echo]\n", 1)


def _wrong_typed_items(budget: int) -> str:
    # 100,000 commands of the wrong type: one schema error each.
    return _repeat(budget, HEAD + "taskRoles:\n  a:\n    instances: 1\n    dockerImage: img\n"
                   "    resourcePerInstance: {cpu: 1, memoryMB: 100, gpu: 0}\n    commands:\n", "      - {}\n")


def _just(budget_delta: int) -> Callable[[int], str]:
    def shape(budget: int) -> str:
        text = JOB + "# " + "c" * (MAX_FILE_BYTES + budget_delta - len(JOB) - 3) + "\n"
        assert len(text.encode()) == MAX_FILE_BYTES + budget_delta
        return text
    return shape


@dataclasses.dataclass(frozen=True, kw_only=True)
class Shape:
    name: str
    build: Callable[[int], str]
    #: What the shape is about, for the figures table.
    about: str


SHAPES: tuple[Shape, ...] = (
    # Deep nesting: every kind of collection, past the depth limit and as deep as 2 MiB allows.
    Shape(name="nested-block-sequences", build=lambda b: _repeat(b, "", "- ", "a\n"), about="`- - - ...` 1M levels"),
    Shape(name="nested-block-mappings", build=_nested_mappings, about="`k:` indented ~1,400 levels"),
    Shape(name="nested-flow-sequences", build=lambda b: "a: " + "[" * ((b - 4) // 2) + "]" * ((b - 4) // 2) + "\n",
          about="1M `[`"),
    Shape(name="nested-flow-mappings", build=lambda b: _repeat(b, "a: ", "{b: ", "c\n"), about="500k `{b: `"),
    Shape(name="nested-flow-mixed-unclosed", build=lambda b: _repeat(b, "a: ", "[{a: ", "\n"), about="unclosed"),
    # Aliases, anchors and merges.
    Shape(name="aliases-of-a-big-scalar", build=_alias_of_big_scalar, about="a 1 MiB string, aliased 200k times"),
    Shape(name="alias-bomb-nodes", build=_alias_bomb, about="billion laughs, 9^21 nodes"),
    Shape(name="many-small-anchors", build=lambda b: _fill(b, "", lambda i: f"k{i}: &a{i} v\n"),
          about="anchors on 150k keys"),
    Shape(name="merge-chain", build=_merge_chain, about="each mapping merges the previous"),
    Shape(name="merge-fan", build=_merge_fan, about="one mapping merges a 1,000-key one 400k times"),
    Shape(name="merges-nested-deep", build=_deep_merges, about="`<<:` on 99 nested levels"),
    Shape(name="self-merge", build=lambda b: "a: &a\n  <<: *a\n", about="a mapping merging itself"),
    # Size of the file itself.
    Shape(name="newlines", build=lambda b: "\n" * (b - 19) + "protocolVersion: 2\n", about="2 MiB of newlines"),
    Shape(name="comments", build=lambda b: _repeat(b, JOB, "#\n"), about="1M comment lines after a job"),
    Shape(name="one-long-plain-line", build=lambda b: "a: " + "z" * (b - 4) + "\n", about="one 2 MiB line"),
    Shape(name="one-long-quoted-line", build=lambda b: 'a: "' + "q\\\"" * ((b - 7) // 3) + '"\n',
          about="one 2 MiB quoted line with escapes"),
    Shape(name="unclosed-quote", build=lambda b: 'a: "' + "q" * (b - 5) + "\n", about="a quote never closed"),
    Shape(name="long-block-scalar", build=lambda b: _repeat(b, JOB + "description: |\n", "  " + "d" * 78 + "\n"),
          about="2 MiB description"),
    Shape(name="just-under-the-limit", build=_just(0), about="a valid job padded to exactly 2 MiB"),
    Shape(name="just-over-the-limit", build=_just(1), about="one byte too many"),
    Shape(name="many-documents", build=_many_documents, about="`---` 200k times"),
    # Counts: keys, items, roles, diagnostics.
    Shape(name="roles-10000-one-typo", build=lambda b: _roles(b, typo=True, count=10_000),
          about="10k task roles, one typo"),
    Shape(name="roles-max", build=_roles, about="as many task roles as fit (over the node limit)"),
    Shape(name="roles-5000-valid", build=lambda b: _roles(b, count=5000), about="5k valid task roles (compiles)"),
    Shape(name="many-top-level-keys", build=lambda b: "".join(f"k{i}: {i}\n" for i in range(120_000)),
          about="120k top-level keys (just under the node limit)"),
    Shape(name="many-unknown-keys-in-a-job", build=lambda b: _fill(b, JOB, lambda i: f"u{i}: 1\n"),
          about="a job with 250k unknown keys (E202 each, W101 cap)"),
    Shape(name="many-unknown-keys-in-a-role", build=_many_role_keys, about="100k unknown keys in a task role"),
    Shape(name="many-wrong-typed-items", build=_wrong_typed_items, about="200k commands that are mappings"),
    Shape(name="many-block-list-items", build=lambda b: _repeat(b, "a:\n", "- 1\n"), about="500k `- 1` items"),
    Shape(name="many-flow-list-items", build=lambda b: _repeat(b, "a: [1", ",1", "]\n"), about="1M flow items"),
    Shape(name="many-commands", build=lambda b: _repeat(b, JOB, "      - echo hi\n"), about="130k commands"),
    Shape(name="many-parameters", build=_many_parameters, about="150k parameters"),
    Shape(name="many-ports", build=_many_ports, about="100k ports"),
    Shape(name="many-secrets-and-errors", build=_many_secrets_with_errors, about="50k secrets, 100k unknown keys"),
    Shape(name="long-key", build=_long_key, about="one 2 MiB key"),
    Shape(name="many-long-keys", build=_many_long_keys, about="2,000 keys of 1 KiB"),
    # Numbers.
    Shape(name="huge-integers", build=_huge_numbers, about="480 integers of 4,299 digits"),
    Shape(name="huge-floats", build=_huge_floats, about="480 floats of 4,290 digits"),
    Shape(name="too-long-number", build=lambda b: "a: " + "9" * (b - 4) + "\n", about="a 2 MiB integer"),
    Shape(name="long-sexagesimal", build=_sexagesimal, about="`1:59:59:...` 700k parts"),
    Shape(name="huge-job-numbers", build=lambda b: JOB.replace("instances: 1", "instances: 2147483647").replace(
        "prerequisites:", "jobRetryCount: 99999999999999999999\nprerequisites:"), about="int32 overflow values"),
    # Characters.
    Shape(name="controls-in-values-and-keys", build=_controls_in_values, about="C0/C1/bidi escapes, keys too"),
    Shape(name="controls-raw", build=_controls_raw, about="raw NEL/LS/bidi/C1 in a 2 MiB value"),
    Shape(name="controls-in-commands", build=_controls_in_command, about="valid job, C0/C1/bidi in commands"),
    Shape(name="tabs-and-breaks", build=lambda b: _repeat(b, "", "a:\tb\nk: v\u2028w\u0085x\n"),
          about="tabs, LS, NEL repeated"),
    Shape(name="invalid-utf8", build=lambda b: JOB + "a: \udcff\n", about="a lone byte 0xff"),
    # Placeholders.
    Shape(name="many-placeholders", build=_placeholders, about="110k `<% $parameters.x %>` in one command"),
    Shape(name="many-unknown-placeholders", build=_unknown_placeholders, about="50k unknown parameters (W401)"),
    Shape(name="many-unclosed-placeholders", build=_unclosed_placeholders, about="700k `<% ` in one command"),
    # Tags and directives.
    Shape(name="python-tag", build=lambda b: "a: !!python/tuple [1, 2]\n", about="!!python/tuple"),
    Shape(name="many-tags", build=lambda b: _repeat(b, "a: [", "!!str x, ", "x]\n"), about="200k !!str"),
    Shape(name="yaml-directive", build=lambda b: "%YAML 1.3\n---\na: 1\n", about="%YAML 1.3"),
)


def shape_text(shape: Shape, budget: int = MAX_FILE_BYTES) -> bytes:
    text = shape.build(budget)
    if shape.name == "invalid-utf8":
        return text.encode("utf-8", "surrogateescape")
    return text.encode("utf-8")


# -- running paictl in a bounded child ---------------------------------------------------------------------------------

#: Every command a hostile file meets: the two validate reports and compile to each target family.
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("validate",),
    ("validate", "--format", "json"),
    ("compile", "--target", "framework"),
    ("compile", "--target", "local"),
    ("compile", "--target", "jobset"),
)

#: Reported by the child at exit (atexit), from /proc/self/status: the peak of its address space (VmPeak) and of its
#: resident memory (VmHWM). The RSS os.wait4 reports cannot serve: Linux keeps the high-water mark across exec, so
#: it would count the forking parent (pytest: 150 MB).
_PROBE = ("import atexit, os, runpy, sys\n"
          "def _peak():\n"
          "    peaks = {}\n"
          "    for line in open('/proc/self/status'):\n"
          "        if line.startswith(('VmPeak:', 'VmHWM:')):\n"
          "            peaks[line.split(':')[0]] = line.split()[1]\n"
          "    os.write(int(os.environ['PAICTL_PROBE_FD']), f\"{peaks['VmPeak']} {peaks['VmHWM']}\".encode())\n"
          "atexit.register(_peak)\n"
          "sys.argv[0] = 'paictl'\n"
          "runpy.run_module('paictl', run_name='__main__', alter_sys=True)\n")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Outcome:
    exit_code: int
    cpu_seconds: float
    #: The child's peak resident memory (VmHWM), or when it died before reporting it, what os.wait4 says (which
    #: may be the forking parent's).
    peak_rss_mb: float
    #: The child's peak address space (VmPeak), None when it died before reporting it.
    peak_vm_mb: float | None
    stdout: bytes
    stderr: bytes
    signal: int | None


def run_child(args: tuple[str, ...], path: str, *, address_space: int | None = None, cpu_seconds: int = 20,
              wall_seconds: float = 120) -> Outcome:
    """`python -m paictl ARGS PATH` in a child with RLIMIT_AS and RLIMIT_CPU set; its own resource usage from
    os.wait4 (CPU and peak RSS of that child only, however loaded the machine is)."""
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    env = {**os.environ, "PAICTL_PROBE_FD": str(write_end), "NO_COLOR": "1", "COLUMNS": "200"}

    pid = os.fork()
    if pid == 0:  # the child: limits first, then exec (nothing else between fork and exec)
        try:
            os.close(read_end)
            if address_space is not None:
                resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 2))
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            os.execve(sys.executable, [sys.executable, "-c", _PROBE, *args, path], env)
        finally:
            os._exit(127)
    os.close(write_end)
    deadline = time.monotonic() + wall_seconds
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            done, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.01)
    with os.fdopen(read_end, "rb") as probe:
        reported = probe.read()
    out.seek(0)
    err.seek(0)
    signal = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    vm, rss = (int(kb) / 1024 for kb in reported.split()) if reported else (None, usage.ru_maxrss / 1024)
    return Outcome(exit_code=os.waitstatus_to_exitcode(status), cpu_seconds=usage.ru_utime + usage.ru_stime,
                   peak_rss_mb=rss, peak_vm_mb=vm, stdout=out.read(), stderr=err.read(), signal=signal)


def _main(argv: list[str]) -> None:
    wanted = argv[1] if len(argv) > 1 else ""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for shape in SHAPES:
            if wanted not in shape.name:
                continue
            path = Path(folder) / f"{shape.name}.yaml"
            data = shape_text(shape)
            path.write_bytes(data)
            for args in COMMANDS:
                outcome = run_child(args, str(path))
                rows.append((outcome.cpu_seconds, outcome.peak_rss_mb, outcome.peak_vm_mb or 0, outcome.exit_code,
                             shape.name, len(data), " ".join(args)))
    print(f"{'cpu s':>6} {'rss MB':>7} {'vm MB':>7} {'exit':>4}  {'bytes':>8}  shape / command")
    for cpu, rss, vm, code, name, size, command in sorted(rows, reverse=True):
        print(f"{cpu:6.2f} {rss:7.1f} {vm:7.1f} {code:4d}  {size:8d}  {name} / {command}")


if __name__ == "__main__":
    _main(sys.argv)
