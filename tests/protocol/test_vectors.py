"""The test vectors of ``littlestone/protocol/vectors/`` (PROTOCOL.md 11): the checked-in
files are what the code makes, and what they say can be recomputed from PROTOCOL.md's
words alone, with hashlib, hmac and msgpack (nothing of littlestone's), so the spec, the
files and the code cannot drift apart."""

from __future__ import annotations

import hashlib
import hmac
import re
import struct
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

from littlestone.games.classes import FiniteClass, make_class
from littlestone.protocol.codec import decode
from littlestone.protocol.vectors import FILES, check, generate, load, write
from littlestone.protocol.vectors.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_checked_in_files_are_what_the_generator_makes(tmp_path: Path) -> None:
    assert check() == [], "run python -m littlestone.protocol.vectors"
    assert main(["--check"]) == 0
    write(tmp_path)
    (tmp_path / "coin.json").write_text("{}\n")
    assert check(tmp_path) == ["coin"]
    assert sorted(generate()) == sorted(FILES)


def test_the_files_ship_with_the_package() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert '"littlestone.protocol.vectors" = ["*.json"]' in text


def _u(word: int) -> float:
    return (word >> 11) / 2**53


def test_the_coin_from_the_spec_alone() -> None:
    """PROTOCOL.md 7.2: SHAKE-256(key || counter, 8 bytes little-endian, from 0), 8192
    bytes a chunk, read as little-endian 64-bit words, u = (word >> 11) / 2^53; the
    learner's prediction is 1 iff u < p."""
    vectors = load("coin")
    assert (vectors["chunk_bytes"], vectors["first_counter"]) == (8192, 0)
    for case in vectors["cases"]:
        key = bytes.fromhex(case["key"])
        chunk0 = hashlib.shake_256(key + struct.pack("<Q", 0)).digest(8192)
        chunk1 = hashlib.shake_256(key + struct.pack("<Q", 1)).digest(8192)
        words = struct.unpack("<1024Q", chunk0)
        assert chunk0[:64].hex() == case["chunk_0_first_64_bytes"]
        assert list(words[:8]) == case["words"]
        assert [w >> 11 for w in words[:8]] == case["u_53_bits"]
        assert [_u(w) for w in words[:8]] == case["u"]
        following = struct.unpack("<2Q", chunk1[:16])
        assert [_u(words[1023]), _u(following[0]), _u(following[1])] == \
            case["u_1023_1024_1025"]
        for p, decisions in case["predictions"].items():
            assert [int(_u(w) < float(p)) for w in words[:8]] == decisions


def test_the_seeds_from_the_spec_alone() -> None:
    """PROTOCOL.md 7.1: HMAC-SHA256(K, "ROLE:S"), S in decimal (signed); the coin's key
    all 32 bytes; a player's seed the first 8 bytes as an unsigned little-endian int."""
    vectors = load("seeds")
    for case in vectors["cases"]:
        key, seed = bytes.fromhex(case["key"]), case["seed"]
        assert -(1 << 63) <= seed < (1 << 63)
        assert hashlib.sha256(key).hexdigest() == case["commitment"]
        for role in ("referee", "learner", "adversary"):
            mac = hmac.new(key, f"{role}:{seed}".encode(), hashlib.sha256).digest()
            assert mac.hex() == case[role]["hmac"]
        assert case["referee"]["coin_key"] == case["referee"]["hmac"]
        for role in ("learner", "adversary"):
            own = struct.unpack("<Q", bytes.fromhex(case[role]["hmac"])[:8])[0]
            assert own == case[role]["seed"] and 0 <= own < 1 << 64
    for case in vectors["public_keys"]:
        phrase = f"littlestone public game key:{case['seed']}"
        assert hashlib.sha256(phrase.encode()).hexdigest() == case["key"]


def _move_bytes(kind: str, value: Any) -> bytes:
    """PROTOCOL.md 7.3: an int is b"i", its length (4 bytes LE) and its shortest signed
    little-endian bytes with room for a sign bit; a vector is its tag (b"f", b"a" for
    advice), its length in bytes (4 bytes LE) and its float64 little-endian coordinates."""
    if isinstance(value, int):
        raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
        return b"i" + struct.pack("<I", len(raw)) + raw
    raw = struct.pack(f"<{len(value)}d", *value)
    return (b"a" if kind == "advice" else b"f") + struct.pack("<I", len(raw)) + raw


def test_commitments_from_the_spec_alone() -> None:
    vectors = load("commitments")
    for case in vectors["digests"]:
        salt, target = bytes.fromhex(case["salt"]), case["target"]
        tb = (struct.pack("<q", target) if isinstance(target, int)
              else struct.pack(f"<{len(target)}d", *target))
        preimage = (b"littlestone-commitment-v1\x00" + case["class"].encode() + b"\x00"
                    + struct.pack("<I", len(salt)) + salt + tb)
        assert preimage.hex() == case["preimage"]
        assert hashlib.sha256(preimage).hexdigest() == case["digest"]
    for case in vectors["sequences"]:
        h = hashlib.sha256(b"littlestone-sequence-v1\x00" + case["spec"].encode() + b"\x00")
        for move in case["moves"]:
            raw = _move_bytes(move["kind"], move["value"])
            assert raw.hex() == move["bytes"]
            h.update(raw)
        salt = bytes.fromhex(case["salt"])
        h.update(struct.pack("<I", len(salt)) + salt)
        assert h.hexdigest() == case["digest"]


def test_every_class_family_is_in_the_vectors_and_its_hypotheses_are_the_code_s() -> None:
    vectors = load("classes")["cases"]
    families = {case["canonical"].split(":")[0] for case in vectors}
    from littlestone.games.classes import CLASSES
    assert families == set(CLASSES) - {"matrix"}  # (a matrix is read from a file)
    for case in vectors:
        hclass = make_class(case["spec"])
        assert hclass.spec == case["canonical"] == make_class(case["canonical"]).spec
        if isinstance(hclass, FiniteClass):
            for h, row in enumerate(case["table"]):
                assert [int(v) for v in row] == [
                    int(hclass.evaluate(x)[h]) for x in range(hclass.domain_size)]
        else:
            for sample in case["samples"]:
                w, x = np.array(sample["w"]), np.array(sample["x"])
                assert sample["h"] == int(float(w @ x) > 0)
                assert struct.unpack("<2d", bytes.fromhex(sample["x_bin"])) == tuple(x)


def test_a_threshold_labels_1_left_of_its_cut() -> None:
    """PROTOCOL.md 2.1: thresholds:n=N, h_a(x) = [x < a], a = 0..N (the orientation a
    client had to find by experiment)."""
    table = load("classes")["cases"][0]
    assert table["canonical"] == "thresholds:n=4"
    assert table["table"] == ["".join(str(int(x < a)) for x in range(4)) for a in range(5)]


def _from_json(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"bin"}:
        return bytes.fromhex(value["bin"])
    if isinstance(value, dict):
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def test_every_sample_frame_decodes_to_its_message() -> None:
    frames = load("frames")["frames"]
    for frame in frames:
        raw = bytes.fromhex(frame["hex"])
        message = _from_json(frame["message"])
        assert msgpack.unpackb(raw, raw=False) == message, frame["name"]
        assert decode(raw) == message
    types = {frame["message"]["type"] for frame in frames}
    assert {"hello", "welcome", "challenge", "create", "created", "join", "enter",
            "entered", "done", "start", "instance", "predict", "advice", "weights",
            "commit", "prediction", "label", "answer", "costs", "reveal?", "reveal", "end",
            "error", "watch", "watching", "rounds", "revoke", "revoked", "submit",
            "submitted"} <= types


def test_section_9_s_bytes_are_the_hello_vector() -> None:
    text = (ROOT / "PROTOCOL.md").read_text()
    shown = re.search(r"The bytes of the first frame, for checking an encoder:\n`([^`]*)`",
                      text)
    assert shown is not None
    hello = next(f for f in load("frames")["frames"] if f["name"] == "hello")
    assert bytes.fromhex(shown.group(1).replace("\n", " ")).hex() == hello["hex"]


@pytest.mark.parametrize("argv", [["--bogus"], ["--check", "x"]])
def test_the_generator_s_usage_error(argv: list[str]) -> None:
    assert main(argv) == 2
