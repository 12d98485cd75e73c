"""Ed25519 signatures of chain heads: a curator signs, an analyst and a verifier check.

A curator signs the chain head of the analyst's session in every response
(:class:`HeadSigner`); its public key is in ``/v1/health``.  A signed head
is a head (session, n, hash) with ``signature`` and ``public_key`` (both
base64); the signed message is the chain's canonical encoding of
(session, n, hash) (:func:`~dpframe.accounting.ledger_chain.canonical`, kind
``head``).  A head the analyst kept is an anchor for ``dpframe ledger
verify --anchor``: the curator cannot later rewrite that session's chain up
to it without the verifier noticing.

Needs the ``cryptography`` package (the ``curator`` extra).  The private key
is generated on the curator's first start and stored (PEM, PKCS#8, mode
0600) beside the ledger, or where the catalog's ``signing_key`` names.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

from dpframe.accounting.ledger_chain import Head, canonical
from dpframe.errors import LedgerError

__all__ = ["HeadSigner", "check_signed_head", "head_message"]


def head_message(head: Head) -> bytes:
    """The bytes a curator signs for ``head``."""
    return canonical("head", (head.session, head.n, head.hash))


class HeadSigner:
    """A curator's Ed25519 key, loaded from (or created at) ``path``.

    Raises:
        LedgerError: the key file is unreadable or not an Ed25519 private key,
            or ``cryptography`` is not installed.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        try:
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        except ImportError:
            raise LedgerError(
                "Signing chain heads needs the cryptography package: "
                "pip install 'dpframe[curator]'."
            ) from None
        self.path = Path(path)
        if not self.path.exists():
            key = Ed25519PrivateKey.generate()
            pem = key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as out:
                    out.write(pem)
            except FileExistsError:  # another process created it meanwhile: use that one
                pass
            except OSError as exc:
                raise LedgerError(f"Cannot create the signing key {self.path}: {exc}") from None
        try:
            loaded = serialization.load_pem_private_key(self.path.read_bytes(), password=None)
        except (OSError, ValueError, TypeError) as exc:
            raise LedgerError(
                f"The signing key {self.path} is not readable ({exc}); restore it, or move "
                "it away to start a new key (heads signed before then keep the old key)."
            ) from None
        if not isinstance(loaded, Ed25519PrivateKey):
            raise LedgerError(f"The signing key {self.path} is not an Ed25519 private key.")
        self._key = loaded
        raw = loaded.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        #: The public key, base64 (what ``/v1/health`` shows).
        self.public_key = base64.b64encode(raw).decode()

    def sign(self, head: Head) -> dict[str, Any]:
        """``head`` as JSON data with its signature and this key's public key."""
        signature = self._key.sign(head_message(head))
        return {
            **head.to_dict(),
            "signature": base64.b64encode(signature).decode(),
            "public_key": self.public_key,
        }


def check_signed_head(item: dict[str, Any], public_key: str | None = None) -> Head:
    """The head of a signed head whose signature verifies (under ``public_key`` if given).

    Args:
        item: a signed head (session, n, hash, signature, public_key).
        public_key: the key it must be signed with (base64; None: the key it names,
            which proves only that the head was not changed since it was signed).

    Raises:
        LedgerError: the signature does not verify, the keys differ, or
            ``cryptography`` is not installed.
    """
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError:
        raise LedgerError(
            "Checking a signed head needs the cryptography package: pip install cryptography."
        ) from None
    head = Head(str(item["session"]), int(item["n"]), str(item["hash"]))
    named = str(item.get("public_key", ""))
    if public_key is not None and named != public_key:
        raise LedgerError(
            f"The head {head} was signed by another key than the curator's ({public_key}); "
            "it is not an anchor for this ledger."
        )
    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key or named))
        key.verify(base64.b64decode(str(item["signature"])), head_message(head))
    except (InvalidSignature, ValueError, TypeError):
        raise LedgerError(
            f"The signature of head {head} of session {head.session!r} does not verify: "
            "the head was changed after it was signed, or signed by another key."
        ) from None
    return head
