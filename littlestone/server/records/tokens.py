"""The index's tokens: who may connect to a server of this data folder, and as what
(PROTOCOL.md 3.1). A token is shown once, when it is made, and kept as its SHA-256 only.

The tokens table shares the index's connection and nothing else: no game, tournament
or anchor refers to it. :class:`TokenTable` holds its statements, and
:class:`~.store.Store` has them as its own (``store.add_token(...)``).

>>> import hashlib, tempfile, pathlib
>>> tokens = TokenTable(pathlib.Path(tempfile.mkdtemp()))
>>> token = tokens.add_token("ann", "spectator")
>>> tokens.token_account(hashlib.sha256(token.encode()).hexdigest())
('ann', 'spectator')
>>> tokens.add_token("ann")
Traceback (most recent call last):
...
littlestone.games.errors.TokenError: 'ann' has a token already: revoke it first, ...
>>> tokens.revoke_token("ann"), tokens.tokens()
(True, [])
"""

from __future__ import annotations

import hashlib
import secrets
from typing import cast

from littlestone.games.errors import TokenError
from littlestone.server.records.database import Database, utc_now
from littlestone.server.records.rows import TokenRow

__all__ = ["TOKEN_ROLES", "TokenError", "TokenTable"]

#: What a token lets its holder do (PROTOCOL.md 3.1): a ``player`` plays and watches its
#: own games, a ``spectator`` only watches, an ``admin`` may do anything, revoking
#: tokens over the network included.
TOKEN_ROLES = ("player", "spectator", "admin")


class TokenTable(Database):
    """The statements on the ``tokens`` table of an index."""

    def add_token(self, name: str, role: str = "player", replace: bool = False) -> str:
        """A new token for ``name`` with ``role``: returned once, stored as its SHA-256
        only. A name that has a token already is refused (:class:`TokenError`) unless
        ``replace``, which voids the old token."""
        if role not in TOKEN_ROLES:
            raise TokenError(f"role {role!r}: one of {', '.join(TOKEN_ROLES)}")
        token = "ls_" + secrets.token_urlsafe(24)  # never starts with "-" (a CLI option)
        digest = hashlib.sha256(token.encode()).hexdigest()
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        added = self._change(f"{verb} INTO tokens (name, sha256, created, role) "
                             "VALUES (?, ?, ?, ?)", (name, digest, utc_now(), role))
        if not added:
            raise TokenError(f"{name!r} has a token already: revoke it first, or add it "
                             "again with --replace (which voids the old one)")
        return token

    def tokens(self) -> list[TokenRow]:
        """Every token's name, role and creation time (never the token, nor its hash)."""
        rows = self._run("SELECT name, role, created FROM tokens ORDER BY name")
        return [cast("TokenRow", dict(row)) for row in rows]

    def revoke_token(self, name: str) -> bool:
        """Void ``name``'s token; False if it has none."""
        return bool(self._change("DELETE FROM tokens WHERE name = ?", (name,)))

    def token_account(self, sha256: str) -> tuple[str, str] | None:
        """The name and role a token (given by its SHA-256) belongs to."""
        rows = self._run("SELECT name, role FROM tokens WHERE sha256 = ?", (sha256,))
        return (str(rows[0]["name"]), str(rows[0]["role"])) if rows else None
