"""`status -A` lists every namespace's (Kubernetes) or every user's (OpenPAI) jobs; where it cannot change anything
it says so in one line on standard error, and the listing is what it would be without it."""

from __future__ import annotations


def test_all_users_on_local_runs_says_why_it_changes_nothing(run_cli):
    plain = run_cli("status", "--target", "local", "-o", "json")
    code, out, err = run_cli("status", "-A", "--target", "local", "-o", "json")
    assert (code, out) == (plain[0], plain[1])
    assert err == "paictl: note: -A changes nothing for --target local: this machine's runs are all listed anyway\n"
