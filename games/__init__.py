"""The rules of the games: hypothesis classes, Littlestone dimension, the referees.

Nothing here touches sockets, clocks or asyncio: the referees are state machines that
take moves and return records (docs/design.md section 2).
"""
