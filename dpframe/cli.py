r"""The ``dpframe`` command: a curator (``serve``), its tokens (``new-token``), ledger upkeep.

Examples::

    dpframe new-token                      # prints a token (give it to the analyst)
                                           # and its hash (put it in the catalog)
    dpframe ledger scrub ledger.sqlite     # removes the unkeyed digests and fingerprints
                                           # an older dpframe (schema <= 5) left in a ledger
    dpframe ledger verify ledger.sqlite    # checks the hash chains, spends and noise scales
    dpframe ledger export ledger.sqlite --session NAME --out DIR   # a release bundle
    dpframe ledger backup ledger.sqlite copy.sqlite                # a consistent 0600 copy
    dpframe ledger summary catalog.toml    # per dataset: cap and use; per analyst: spend
    dpframe serve --catalog catalog.toml   # binds 127.0.0.1:8765 by default
    dpframe serve --catalog catalog.toml --host 0.0.0.0 --ssl-certfile cert.pem \
        --ssl-keyfile key.pem              # beyond loopback: TLS

A host other than loopback is refused without TLS (``--ssl-certfile`` and
``--ssl-keyfile``, passed to uvicorn) unless ``--insecure-http`` says that
plain HTTP is meant (tokens and releases then cross the network in clear).
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpframe", description="dpframe: differentially private exploration of tables."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve", help="run a curator that answers analysts only with DP releases"
    )
    serve.add_argument("--catalog", required=True, help="the data owner's catalog.toml")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    serve.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    serve.add_argument("--log-level", default="warning", help="uvicorn log level")
    serve.add_argument("--ssl-certfile", help="TLS certificate (PEM), with --ssl-keyfile")
    serve.add_argument("--ssl-keyfile", help="TLS private key (PEM), with --ssl-certfile")
    serve.add_argument(
        "--insecure-http",
        action="store_true",
        help="serve plain HTTP on a host other than loopback (tokens travel in clear)",
    )
    serve.add_argument(
        "--no-docs", action="store_true", help="leave out the interactive /docs and /redoc pages"
    )
    serve.add_argument(
        "--threads",
        type=int,
        default=None,
        help="worker threads computing releases (default 40); health checks use none",
    )
    commands.add_parser("new-token", help="print a new analyst token and its hash for the catalog")
    ledger = commands.add_parser("ledger", help="maintain a ledger file")
    ledger_commands = ledger.add_subparsers(dest="ledger_command", required=True)
    scrub = ledger_commands.add_parser(
        "scrub",
        help="remove the unkeyed digests and fingerprints an older dpframe left in a ledger",
        description=(
            "A ledger written by dpframe up to schema 5 names data by unkeyed fingerprints and "
            "keeps unkeyed per-column digests, from which the row count and the count of "
            "positives of a yes/no column can be recovered. scrub replaces the fingerprints by "
            "keyed identities (your key: $DPFRAME_KEY, else ~/.config/dpframe/key), deletes the "
            "digests and rewrites the file so that no deleted page keeps them. Budgets and "
            "releases are kept; loading the data again still finds its releases. Without "
            "scrub, each data set's entries are rekeyed when it is next loaded."
        ),
    )
    scrub.add_argument("path", help="the ledger file (e.g. ~/.local/share/dpframe/ledger.sqlite)")
    from dpframe.ledger_cli import add_commands

    add_commands(ledger_commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``dpframe`` command line; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "ledger":
        return _ledger(args)
    if args.command == "new-token":
        from dpframe.curator.catalog import new_token

        token, digest = new_token()
        print(f"token (give to the analyst, keep secret): {token}")
        print(f'catalog entry:  token_sha256 = "{digest}"')
        return 0
    refusal = _transport_refusal(args)
    if refusal is not None:
        print(f"dpframe serve: {refusal}", file=sys.stderr)
        return 2
    from dpframe.curator.catalog import Catalog, CatalogError

    try:
        import uvicorn

        from dpframe.curator.app import create_app
    except ImportError:
        print(
            "dpframe serve needs the curator extra: pip install 'dpframe[curator]'", file=sys.stderr
        )
        return 2
    try:
        catalog = Catalog.load(args.catalog)
        from dpframe.curator.service import Curator

        curator = Curator(catalog)  # checks every column's declared kind (file headers only)
    except CatalogError as exc:
        print(f"dpframe serve: {exc}", file=sys.stderr)
        return 2
    names = ", ".join(sorted(catalog.datasets))
    scheme = "https" if args.ssl_certfile else "http"
    for line in curator.start_lines():  # the catalog against the ledger; the Dask cluster
        print(f"dpframe curator: {line}", flush=True)
    print(f"dpframe curator: serving {names} on {scheme}://{args.host}:{args.port}", flush=True)
    if scheme == "http" and not _is_loopback(args.host):
        print("dpframe serve: WARNING: plain HTTP beyond loopback (--insecure-http)", flush=True)
    uvicorn.run(
        create_app(curator, docs=not args.no_docs, threads=args.threads),
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        ssl_certfile=args.ssl_certfile,
        ssl_keyfile=args.ssl_keyfile,
    )
    return 0


def _ledger(args: argparse.Namespace) -> int:
    """``dpframe ledger scrub PATH``: print what was removed; exit 2 if the file is refused."""
    if args.ledger_command != "scrub":
        from dpframe.ledger_cli import run

        return run(args)
    from dpframe.accounting.ledger_legacy import scrub_file
    from dpframe.errors import LedgerError

    try:
        report = scrub_file(args.path)
    except LedgerError as exc:
        print(f"dpframe ledger scrub: {exc}", file=sys.stderr)
        return 2
    if not report.datasets and not report.digests:
        print(f"{report.path}: no unkeyed digests or fingerprints (file rewritten).")
    else:
        print(
            f"{report.path}: {report.digests} unkeyed digest(s) deleted, {report.datasets} "
            "unkeyed fingerprint(s) replaced by keyed identities; the file was rewritten."
        )
    return 0


def _is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _transport_refusal(args: argparse.Namespace) -> str | None:
    """Why these serve arguments are refused (before anything is loaded), or None."""
    if bool(args.ssl_certfile) != bool(args.ssl_keyfile):
        return "give --ssl-certfile and --ssl-keyfile together."
    if args.ssl_certfile or args.insecure_http or _is_loopback(args.host):
        return None
    return (
        f"--host {args.host} is not loopback, and analysts' tokens and releases would cross "
        "the network in clear. Give --ssl-certfile and --ssl-keyfile (TLS), or --insecure-http "
        "if plain HTTP is really meant (e.g. behind a TLS proxy on the same host)."
    )


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
