"""The wire format (PROTOCOL.md): error codes, the msgpack codec with its limits, the
messages, their types (``wire``) and their checks, the per-connection session state.
Sans-I/O: bytes in, messages out; no sockets here."""
