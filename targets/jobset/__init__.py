"""Kubernetes JobSet target: target.py (compile), names.py, pod.py, status.py (JobSet status -> job states)."""
