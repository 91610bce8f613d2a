"""Draws the manual's diagrams (docs/images/*.svg) from the text descriptions below: `python docs/scripts/diagrams.py`.

Each diagram is a row of lanes (a machine or a service: where things run), each lane a column of boxes, and arrows
between boxes. Plain SVG with the page's font; no drawing library, so the pictures change with a line of text here.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "images"
BOX_W, BOX_H, GAP_Y, LANE_PAD, LANE_GAP, TOP = 200, 46, 30, 16, 70, 44
COLORS = {"paictl": "#e8f0fe", "cluster": "#e6f4ea", "peer": "#fef7e0", "task": "#fce8e6", "data": "#f1f3f4"}

# name: (title, lanes, arrows); a lane is (heading, [(box id, label, kind)]); an arrow is (from, to, label).
DIAGRAMS = {
    "flow": ("paictl: from a job file to a verdict", [
        ("your files", [("job", "job.yaml (protocol v2)", "data"), ("profile", "profile (your cluster's settings)", "data"),
                        ("params", "-p key=value, --parameters", "data")]),
        ("paictl validate", [("read", "read: UTF-8, YAML, limits", "paictl"), ("schema", "schema: OpenPAI's rules", "paictl"),
                             ("sem", "semantics: names, placeholders", "paictl")]),
        ("paictl compile --target", [("fw", "framework: Framework", "paictl"), ("js", "jobset: JobSet", "paictl"),
                                     ("mars", "mars: MarsJob", "paictl"), ("grass", "grass: MARO job + plan", "paictl"),
                                     ("local", "local: a run plan", "paictl"), ("pai", "openpai: the job document", "paictl")]),
        ("paictl submit / status / logs / stop", [("k8s", "Kubernetes API server", "cluster"), ("redis", "Grass master's Redis", "cluster"),
                                     ("host", "this machine", "cluster"), ("rest", "OpenPAI REST server", "cluster")]),
    ], [("job", "read", ""), ("read", "schema", ""), ("schema", "sem", ""), ("profile", "sem", ""), ("params", "sem", ""),
        ("sem", "fw", ""), ("sem", "js", ""), ("sem", "mars", ""), ("sem", "grass", ""), ("sem", "local", ""),
        ("sem", "pai", ""),
        ("fw", "k8s", ""), ("js", "k8s", ""), ("mars", "k8s", ""), ("grass", "redis", ""), ("local", "host", ""),
        ("pai", "rest", "")]),
    "backend-local": ("--target local: everything on this machine", [
        ("your terminal", [("cli", "paictl submit --follow", "paictl"), ("status", "paictl status / logs / stop", "paictl")]),
        ("this machine, in the background", [("sup", "supervisor (detached)", "paictl"),
                                             ("runs", "run folder ~/.local/state/paictl/runs/JOB", "data"),
                                             ("dog", "watchdog (if paictl is killed)", "paictl")]),
        ("each task instance", [("t0", "server-0: host process or container", "task"),
                                ("t1", "client-0: host process or container", "task"),
                                ("docker", "docker engine (if one answers)", "peer")]),
    ], [("cli", "sup", "starts"), ("sup", "t0", "PAI_* env"), ("sup", "t1", ""), ("sup", "runs", "state, logs"),
        ("status", "runs", "reads"), ("dog", "docker", "removes containers")]),
    "backend-kubernetes": ("--target framework | jobset | mars: your Kubernetes cluster", [
        ("your machine", [("cli", "paictl submit / status --follow", "paictl"), ("kc", "kubeconfig (context, namespace)", "data")]),
        ("control plane", [("api", "API server", "cluster"), ("ctl", "FrameworkController / JobSet / KubeDL", "peer"),
                           ("sec", "Secrets (job secrets, registry auth)", "data")]),
        ("nodes", [("pod0", "pod: barrier init + task", "task"), ("pod1", "pod: barrier init + task", "task")]),
    ], [("cli", "api", "server-side apply, watch"), ("kc", "cli", ""), ("api", "ctl", "the workload"),
        ("ctl", "pod0", "creates pods"), ("ctl", "pod1", ""), ("sec", "pod0", "mounted")]),
    "backend-openpai": ("--target openpai: an OpenPAI cluster", [
        ("your machine", [("cli", "paictl submit / status / logs", "paictl"), ("cfg", "clusters file + token (keyring)", "data")]),
        ("OpenPAI services", [("pylon", "pylon (front proxy)", "cluster"), ("rest", "REST server /api/v2", "cluster"),
                              ("lm", "log-manager", "cluster")]),
        ("OpenPAI's Kubernetes", [("fc", "FrameworkController (HiveD)", "peer"), ("pods", "the job's pods", "task")]),
    ], [("cli", "pylon", "HTTPS, token"), ("cfg", "cli", ""), ("pylon", "rest", ""), ("rest", "fc", "Framework"),
        ("fc", "pods", ""), ("cli", "lm", "logs (its own token)"), ("lm", "pods", "")]),
    "backend-grass": ("--target grass: a MARO Grass cluster of plain machines", [
        ("your machine", [("cli", "paictl submit / status / stop", "paictl"), ("file", "cluster file", "data")]),
        ("master", [("redis", "Redis: jobs, nodes, containers", "cluster"), ("master", "paictl grass master (or MARO's)", "peer")]),
        ("nodes", [("node", "paictl grass node (or MARO's agent)", "peer"), ("c0", "containers (docker) or processes", "task")]),
    ], [("cli", "redis", "job + ticket"), ("file", "cli", ""), ("master", "redis", "places"), ("master", "node", "node API"),
        ("node", "c0", "runs"), ("node", "redis", "heartbeat")]),
}


def draw(title: str, lanes, arrows) -> str:
    tallest = max(len(boxes) for _, boxes in lanes)
    lane_w = BOX_W + 2 * LANE_PAD
    width = len(lanes) * lane_w + (len(lanes) - 1) * LANE_GAP + 2 * LANE_PAD
    height = TOP + 34 + tallest * (BOX_H + GAP_Y) + LANE_PAD
    where = {}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'role="img" aria-label="{escape(title)}" font-family="Roboto, Helvetica, Arial, sans-serif" font-size="12">',
             f"<title>{escape(title)}</title>",
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#5f6368"/></marker></defs>',
             f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
             f'<text x="{LANE_PAD}" y="24" font-size="15" font-weight="bold" fill="#202124">{escape(title)}</text>']
    for column, (heading, boxes) in enumerate(lanes):
        x = LANE_PAD + column * (lane_w + LANE_GAP)
        parts.append(f'<rect x="{x}" y="{TOP}" width="{lane_w}" height="{height - TOP - 4}" rx="8" fill="#fafafa" '
                     'stroke="#dadce0"/>')
        parts.append(f'<text x="{x + lane_w / 2}" y="{TOP + 20}" text-anchor="middle" font-weight="bold" '
                     f'fill="#3c4043">{escape(heading)}</text>')
        for row, (ident, label, kind) in enumerate(boxes):
            bx, by = x + LANE_PAD, TOP + 34 + row * (BOX_H + GAP_Y)
            where[ident] = (bx, by)
            parts.append(f'<rect x="{bx}" y="{by}" width="{BOX_W}" height="{BOX_H}" rx="6" fill="{COLORS[kind]}" '
                         'stroke="#80868b"/>')
            lines = _wrap(label, 30)
            for i, line in enumerate(lines):
                ty = by + BOX_H / 2 + (i - (len(lines) - 1) / 2) * 14 + 4
                parts.append(f'<text x="{bx + BOX_W / 2}" y="{ty}" text-anchor="middle" fill="#202124">'
                             f"{escape(line)}</text>")
    for source, target, label in arrows:
        (sx, sy), (tx, ty) = where[source], where[target]
        if sx == tx:  # same lane: straight down
            x1, y1, x2, y2 = sx + BOX_W / 2, sy + BOX_H, tx + BOX_W / 2, ty
            if ty < sy:
                y1, y2 = sy, ty + BOX_H
        elif tx > sx:
            x1, y1, x2, y2 = sx + BOX_W, sy + BOX_H / 2, tx, ty + BOX_H / 2
        else:
            x1, y1, x2, y2 = sx, sy + BOX_H / 2, tx + BOX_W, ty + BOX_H / 2
        parts.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#5f6368" stroke-width="1.4" '
                     'marker-end="url(#arrow)"/>')
        if label and x1 == x2:  # a vertical arrow: the label beside it
            parts.append(f'<text x="{x1 + 6}" y="{(y1 + y2) / 2 + 4}" font-size="11" fill="#3c4043">{escape(label)}</text>')
        elif label:
            parts.append(f'<text x="{(x1 + x2) / 2}" y="{(y1 + y2) / 2 - 5}" text-anchor="middle" font-size="11" '
                         f'fill="#3c4043" paint-order="stroke" stroke="#ffffff" stroke-width="3">{escape(label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _wrap(label: str, width: int) -> list[str]:
    lines, line = [], ""
    for word in label.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + [line]


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, (title, lanes, arrows) in DIAGRAMS.items():
        (OUT / f"{name}.svg").write_text(draw(title, lanes, arrows), encoding="utf-8")
        print(f"wrote docs/images/{name}.svg")


if __name__ == "__main__":
    main()
