"""`paictl openpai clusters|add|remove|login`: the OpenPAI clusters a user submits to, and their tokens.

Tokens are never printed, never echoed while typed, and never written in plain text unless `--store-plaintext` is
given; every message that could quote one goes through the client's redaction guard first.
"""

import sys
from typing import Optional

import typer

from paictl.errors import PaictlError, UsageError

from .errors import check_seconds
from .errors import fail as _fail

openpai_app = typer.Typer(name="openpai", no_args_is_help=True,
                          help="OpenPAI clusters: aliases, REST server URLs, users and where their tokens are.")

_FORMAT = typer.Option("text", "--output", "-o", "--format", metavar="FORMAT", help="text or json.")
_TOKEN_ENV = typer.Option(None, "--token-env", metavar="VAR",
                          help="Read the token from this environment variable (e.g. an application token in CI).")
_VIRTUAL_CLUSTER = typer.Option(None, "--virtual-cluster", metavar="VC",
                                help="Virtual cluster used when the job names none (default: default).")


@openpai_app.command("clusters", short_help="List the configured clusters.")
def clusters_command(output_format: str = _FORMAT) -> None:
    """List the configured clusters and print where the clusters file is. Tokens are never shown."""
    from paictl.targets.openpai.clusters import clusters_path, display_url, load_clusters

    try:
        if output_format not in ("text", "json"):
            raise UsageError(f"-o/--output {output_format!r}: expected text or json")
        path = clusters_path()
        entries = load_clusters(path)
    except PaictlError as error:
        _fail(error)
    rows = [{"alias": e.alias, "url": display_url(e.url), "user": e.user, "token": e.token_source,
             "virtualCluster": e.virtual_cluster or "default"} for e in entries.values()]
    if output_format == "json":
        typer.echo(_json_text({"path": str(path), "clusters": rows}, ensure_ascii=False))
        return
    typer.echo(f"clusters file: {path}")
    if not rows:
        typer.echo("no clusters yet: paictl openpai add ALIAS URL --user NAME", err=True)
        return
    table = [("ALIAS", "URL", "USER", "VIRTUAL CLUSTER", "TOKEN")]
    table += [(r["alias"], r["url"], r["user"], r["virtualCluster"], r["token"]) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
    for row in table:
        typer.echo("   ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "   " + row[-1])


@openpai_app.command("add", short_help="Add a cluster alias, or change one.")
def add_command(
    alias: str = typer.Argument(..., metavar="ALIAS", help="A short name for the cluster (used with --cluster)."),
    url: str = typer.Argument(..., metavar="URL",
                              help="The cluster as you open it in a browser, e.g. https://pai.example.com (its REST "
                                   "API, https://pai.example.com/rest-server, is found), or the REST server's own "
                                   "address."),
    user: str = typer.Option(..., "--user", "-u", help="Your OpenPAI user name."),
    token_env: Optional[str] = _TOKEN_ENV,
    virtual_cluster: Optional[str] = _VIRTUAL_CLUSTER,
    min_poll_interval: float = typer.Option(1.0, "--min-poll-interval", metavar="SECONDS",
                                            help="Least time between two status requests while following."),
    no_check: bool = typer.Option(False, "--no-check",
                                  help="Store the URL as given, without asking the server where its API is."),
) -> None:
    """Add a cluster (or change an existing alias). The token comes later: --token-env here, or `login`.

    paictl asks the server where its REST API is (`GET /api/v2/info` at the URL, then at URL/rest-server) and
    stores that; when nothing answers, the URL is stored as given and a warning says so.
    """
    import dataclasses

    from paictl.compiler.profiles import check_override
    from paictl.targets.openpai.clusters import (ClusterEntry, check_alias, check_url, discover_api, display_url,
                                                 load_clusters, save_clusters)

    note = None
    try:
        check_seconds(min_poll_interval, "--min-poll-interval")
        check_override("user", user, "--user")  # OpenPAI labels each of the user's Frameworks userName: <user>
        entries = load_clusters()
        given = check_url(url)
        api_url = given
        if not no_check:
            api_url, note = discover_api(given)
        entry = ClusterEntry(alias=check_alias(alias), url=api_url, user=user, token_env=token_env,
                             virtual_cluster=virtual_cluster, min_poll_interval=min_poll_interval)
        old = entries.get(alias)
        if old is not None and token_env is None and old.url == entry.url and old.user == user:
            entry = dataclasses.replace(entry, token_env=old.token_env, token_store=old.token_store,
                                        token=old.token)  # same server and user: keep the login
        entries[alias] = entry
        path = save_clusters(entries)
    except PaictlError as error:
        _fail(error)
    if note:
        typer.echo(f"paictl: warning: could not ask the server where its REST API is ({note}); stored the URL as "
                   "given", err=True)
    found = f" (the REST API of {display_url(given)})" if api_url != given else ""
    typer.echo(f"cluster {alias}: {display_url(entry.url)}{found} as {user}; token: {entry.token_source} ({path})")


@openpai_app.command("remove", short_help="Remove a cluster alias and its kept token.")
def remove_command(alias: str = typer.Argument(..., metavar="ALIAS")) -> None:
    """Remove a cluster alias (and its token from the OS keyring, if it was kept there)."""
    from paictl.targets.openpai.clusters import forget_token, get_cluster, load_clusters, save_clusters

    try:
        entry = get_cluster(alias)
        entries = load_clusters()
        del entries[alias]
        save_clusters(entries)
        forget_token(entry)
    except PaictlError as error:
        _fail(error)
    typer.echo(f"cluster {alias} removed")


@openpai_app.command("login", short_help="Log in to a cluster and keep its token.")
def login_command(
    alias: str = typer.Argument(..., metavar="ALIAS"),
    user: Optional[str] = typer.Option(None, "--user", "-u", help="Log in as this user (default: the alias's)."),
    password_stdin: bool = typer.Option(False, "--password-stdin",
                                        help="Read the password from standard input instead of prompting."),
    token_env: Optional[str] = _TOKEN_ENV,
    token_stdin: bool = typer.Option(False, "--token-stdin",
                                     help="Read an application token (web portal > Profile) from standard input."),
    store_plaintext: bool = typer.Option(False, "--store-plaintext",
                                         help="Keep the token in the clusters file (mode 0600) when no OS keyring "
                                              "is available. Anyone who can read the file can act as you."),
    expiration: Optional[int] = typer.Option(None, "--expiration", metavar="SECONDS",
                                             help="Ask the server for a token that expires after this long."),
) -> None:
    """Get a token: user name and password (`POST /api/v2/authn/basic/login`; the password is never echoed), an
    application token from standard input, or an environment variable that holds one (--token-env)."""
    import dataclasses

    from paictl.compiler.profiles import check_override
    from paictl.targets.openpai.clusters import (basic_login, check_token, check_token_storage, display_url,
                                                 get_cluster, load_clusters, revoke_token, save_clusters,
                                                 store_token)

    try:
        if sum((password_stdin, token_env is not None, token_stdin)) > 1:
            raise UsageError("choose one of --password-stdin, --token-env and --token-stdin")
        entry = get_cluster(alias)
        if user is not None:
            entry = dataclasses.replace(entry, user=check_override("user", user, "--user"))
        if token_env is not None:
            entry = dataclasses.replace(entry, token_env=token_env, token_store=None, token=None)
            unchecked = check_token(entry)
            how = f"token from ${token_env}" + (f" (not checked: {unchecked})" if unchecked else "")
        elif token_stdin:
            token = sys.stdin.readline().strip()
            if not token:
                raise UsageError("--token-stdin: standard input is empty")
            entry = store_token(dataclasses.replace(entry, token_env=None), token, plaintext=store_plaintext)
            unchecked = check_token(entry)
            how = f"application token kept in the {_place(entry)}" + (
                f" (not checked: {unchecked})" if unchecked else "")
        else:
            check_token_storage(plaintext=store_plaintext)
            if not password_stdin and not sys.stdin.isatty():  # getpass would fall back to an echoing read
                raise UsageError("standard input is not a terminal: pass --password-stdin to read the password "
                                 "from it, or use --token-env")
            password = sys.stdin.readline().rstrip("\r\n") if password_stdin else \
                typer.prompt(f"Password for {entry.user} at {display_url(entry.url)}", hide_input=True, err=True)
            if not password:
                raise UsageError("empty password")
            user_name, token = basic_login(entry, password, expiration)
            try:
                entry = store_token(dataclasses.replace(entry, user=user_name, token_env=None), token,
                                    plaintext=store_plaintext)
            except PaictlError as error:
                left = "" if revoke_token(entry, token) else " (the new token could not be revoked on the server)"
                raise UsageError(f"{error}{left}") from None
            how = f"token kept in the {_place(entry)}"
        entries = load_clusters()
        entries[alias] = entry
        save_clusters(entries)
    except PaictlError as error:
        _fail(error)
    typer.echo(f"logged in to {alias} ({display_url(entry.url)}) as {entry.user}; {how}")


def _place(entry) -> str:
    return "OS keyring" if entry.token_store == "keyring" else "clusters file (plaintext, mode 0600)"


def _json_text(data, **options) -> str:
    """json.dumps, imported when JSON is printed: every command module is imported for `paictl --help`."""
    from paictl.compiler.emit import strict_json

    return strict_json(data, **options)


def cluster_aliases() -> list[str]:
    """The aliases of the clusters file, for shell completion (completion.py): a small local file, no request; a
    broken file offers nothing (`paictl openpai clusters` says what is wrong with it)."""
    from paictl.targets.openpai.clusters import clusters_path, load_clusters

    try:
        path = clusters_path()
        return list(load_clusters(path)) if path.is_file() else []
    except (PaictlError, OSError):
        return []
