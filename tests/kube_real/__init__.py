"""A real Kubernetes control plane for the tests (control_plane.py), built by .ci/provision-kube.sh from the Go
module proxy, and the pytest side of it (fixtures.py)."""

from .control_plane import ControlPlane, ControlPlaneUnavailable, missing, versions

__all__ = ["ControlPlane", "ControlPlaneUnavailable", "missing", "versions"]
