"""The images of a local run in docker, made present before any task starts, as `--pull never|missing|always`
says: an image that is absent and may not, or cannot, be pulled refuses the whole job with one line (exit 3), and
a pull shows its progress as one line that changes in place.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from paictl.errors import ClusterError, display_url

from paictl.targets.docker_runtime import Engine, EngineError
from paictl.targets.local.choices import check_choices, images
from paictl.targets.local.containers import Report


def ensure_images(plan: Mapping[str, Any], engine: Engine, policy: str, report: Optional[Report]) -> list[str]:
    """Make every image of the plan present, as `--pull` says; the lines to tell the user. ClusterError (3) with
    one line when one is absent and may not, or cannot, be pulled: before any task starts."""
    check_choices(None, policy)
    lines = []
    for image, roles in images(plan).items():
        used_by = f"task role{'s' if len(roles) > 1 else ''} {', '.join(roles)}"
        present = _present(engine, image)
        if present and policy != "always":
            continue
        if not present and policy == "never":
            raise ClusterError(f"image {image} ({used_by}) is not on the docker engine at "
                               f"{display_url(engine.address.url)}, "
                               "and --pull never forbids pulling it")
        if report is not None:
            report(f"paictl: pulling image {image} ({used_by})", False)
        progress = PullProgress(image, report)
        try:
            engine.pull(image, progress)
        except EngineError as error:
            if report is not None:
                report("", True)
            if present:  # --pull always, and the registry cannot be reached: the copy here is used
                lines.append(f"paictl: image {image}: could not pull a newer one ({_first_line(error)}); the one "
                             "on this machine is used")
                continue
            raise ClusterError(f"image {image} ({used_by}) is not on this machine and cannot be pulled: "
                               f"{_first_line(error)} (--runtime host runs the tasks without it)") from None
        if report is not None:
            report("", True)
        lines.append(f"paictl: image {image}: pulled{progress.summary()}")
    return lines


def _present(engine: Engine, image: str) -> bool:
    try:
        return engine.image(image) is not None
    except EngineError as error:
        if error.status == 400:  # not a valid reference: pulling says why in the same words
            return False
        raise ClusterError(f"docker engine: {_first_line(error)}") from None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


class PullProgress:
    """The engine's pull records as one line that changes in place: bytes downloaded of the layers' total."""

    def __init__(self, image: str, report: Optional[Report]):
        self.image, self.report = image, report
        self.layers: dict[str, tuple[int, int]] = {}
        self.done: set[str] = set()

    def __call__(self, record: Mapping[str, Any]) -> None:
        layer = record.get("id")
        status = str(record.get("status", ""))
        detail = record.get("progressDetail") or {}
        if layer and status == "Downloading" and detail.get("total"):
            self.layers[layer] = (int(detail.get("current", 0)), int(detail["total"]))
        elif layer and status in ("Download complete", "Pull complete", "Already exists"):
            self.done.add(layer)
            if layer in self.layers:
                self.layers[layer] = (self.layers[layer][1], self.layers[layer][1])
        if self.report is not None:
            current = sum(c for c, _ in self.layers.values())
            total = sum(t for _, t in self.layers.values())
            size = f"{current / 1e6:.1f} of {total / 1e6:.1f} MB, " if total else ""
            self.report(f"pulling {self.image}: {size}{len(self.done)} layer(s) done ({status})", True)

    def summary(self) -> str:
        total = sum(t for _, t in self.layers.values())
        return f" ({total / 1e6:.1f} MB)" if total else ""
