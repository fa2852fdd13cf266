"""The rules of the games: hypothesis classes, Littlestone dimension, the referees.

Nothing here touches sockets, clocks or asyncio: the referees are state machines that
take moves and return records (docs/design.md section 2).
"""

# one import name per file: the top-level games/ is a link kept for the design card's
# layout, so ``import games`` from a clone's root would load a second copy of every module
if __name__ != "littlestone.games":  # pragma: no cover
    raise ImportError(f"import littlestone.games, not {__name__}")
