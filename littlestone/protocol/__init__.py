"""The wire format (PROTOCOL.md): error codes, the msgpack codec with its limits, the
messages, their types (``wire``), their builders (``build``) and their checks, the
per-connection session state.
Sans-I/O: bytes in, messages out; no sockets here."""

# one import name per file: the top-level protocol/ is a link kept for the design card's
# layout, so ``import protocol`` from a clone's root would load a second copy of every module
if __name__ != "littlestone.protocol":  # pragma: no cover
    raise ImportError(f"import littlestone.protocol, not {__name__}")
