"""The ``dpframe`` command: ``dpframe serve`` runs a curator, ``dpframe new-token`` makes a token.

Examples::

    dpframe new-token                      # prints a token (give it to the analyst)
                                           # and its hash (put it in the catalog)
    dpframe serve --catalog catalog.toml   # binds 127.0.0.1:8765 by default
"""

from __future__ import annotations

import argparse
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
    commands.add_parser("new-token", help="print a new analyst token and its hash for the catalog")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``dpframe`` command line; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "new-token":
        from dpframe.curator.catalog import new_token

        token, digest = new_token()
        print(f"token (give to the analyst, keep secret): {token}")
        print(f'catalog entry:  token_sha256 = "{digest}"')
        return 0
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
    except CatalogError as exc:
        print(f"dpframe serve: {exc}", file=sys.stderr)
        return 2
    names = ", ".join(sorted(catalog.datasets))
    print(f"dpframe curator: serving {names} on http://{args.host}:{args.port}", flush=True)
    uvicorn.run(create_app(catalog), host=args.host, port=args.port, log_level=args.log_level)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
