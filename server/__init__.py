"""Everything that touches the world: the local driver, the command line (and, later,
the WebSocket server, logs and tournaments)."""
