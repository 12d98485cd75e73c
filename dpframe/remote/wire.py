"""The wire format between an analyst's kernel and a curator (:mod:`dpframe.engine.wire`).

The codec lives in the engine, which also uses it to keep released answers
in the ledger (a re-run request is answered from them); it is named here for
the client and the curator.
"""

from __future__ import annotations

from dpframe.engine.wire import (
    MAX_DEPTH,
    MAX_ECHO,
    ProtocolError,
    check_depth,
    decode_expr,
    decode_response,
    dumps,
    duplicate_key,
    encode_response,
    loads,
    short_name,
    unique_keys,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_ECHO",
    "ProtocolError",
    "check_depth",
    "decode_expr",
    "decode_response",
    "dumps",
    "duplicate_key",
    "encode_response",
    "loads",
    "short_name",
    "unique_keys",
]
