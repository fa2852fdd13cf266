"""The wire format (msgpack over WebSocket): messages, codec, sessions. Sans-I/O.

Specified normatively in PROTOCOL.md; built by the protocol issue. Until then the
package only reserves its place in the layout (DESIGN.md section 2).
"""
