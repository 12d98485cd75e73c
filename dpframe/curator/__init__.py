"""Curator mode, the data owner's side: ``dpframe serve --catalog catalog.toml``.

The curator holds the data, the accountants and the ledger; analysts send
plans as JSON and receive only releases, budget figures and fixed error
codes.  Needs the ``curator`` extra (FastAPI and uvicorn).
"""
