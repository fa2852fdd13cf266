"""What a log may make this process build and run when its game is re-simulated
(``replay --verify``, ``replay`` of a compact log, ``--against``, the ``replay``
adversary).

A log is data anybody can write: its header names the class, the agents and the rounds
that re-simulation builds and plays. A log the index anchors (:mod:`.anchors`: this data
folder recorded it when its game ended, so this folder's operator played it) is
re-simulated as it says, but an agent file it names is imported only if its bytes
still hash as the header recorded (checked *before* importing it). A log nothing anchors
is a stranger's request, held to what a server grants a peer (PROTOCOL.md 1.2): no
file it names is opened or imported (no agent file, no ``matrix:path=``, no
``replay:log=``), only the agents a server serves, at most :data:`ROUNDS` rounds,
:data:`EXPERTS` experts, a class within :data:`CLASS_BUDGET` and exact-Ldim work within
:data:`LDIM_WORK`.

>>> header = {"rules": {"game": "mistake-bound", "class": "thresholds:n=7", "rounds": 10**12},
...           "learner": {"spec": "halving"}, "adversary": {"spec": "random-target"}}
>>> rules_of(header, anchored=False)
Traceback (most recent call last):
...
littlestone.games.errors.LogError: the log asks for 1000000000000 rounds; a log ...
>>> agent_spec(header, "learner", {"spec": "/tmp/x.py:Evil"}, anchored=False)
Traceback (most recent call last):
...
littlestone.games.errors.LogError: the learner /tmp/x.py:Evil is a file agent: ...
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from littlestone.adversaries.base import ADVERSARIES
from littlestone.games.agents import Registry
from littlestone.games.classes import PEER_BUDGET, UNLIMITED, make_class
from littlestone.games.errors import LittlestoneError, LogError
from littlestone.games.game import GameSpec
from littlestone.games.spec import format_spec, parse_spec
from littlestone.learners.base import LEARNERS
from littlestone.server.records.rows import AgentIdentity, LogHeader

__all__ = ["CLASS_BUDGET", "EXPERTS", "LDIM_WORK", "ROUNDS", "agent_spec", "rules_of"]

#: The rounds, experts, class and exact-Ldim work a log nothing anchors may ask for: a
#: server's defaults for a peer's game (``littlestone.server.net.settings.Budgets``).
ROUNDS = 1_000_000
EXPERTS = 100_000
CLASS_BUDGET = PEER_BUDGET
LDIM_WORK = 5_000_000
#: The parameter that caps an agent's exact-Ldim work (as the server's policy).
_LDIM_PARAM = "budget"
_WHY = ("a log nothing anchors is re-simulated only within a server's budgets for a "
        "peer (the index of the data folder that played it anchors it: --data DIR)")


# (header: a log's, as its reader kept the map it read)
def rules_of(header: LogHeader, anchored: bool) -> GameSpec:
    """The rules of a logged game, built within the budgets a log may ask for."""
    rules = header["rules"]
    rounds, experts = int(rules["rounds"]), rules.get("experts")
    if not anchored:
        if rounds > ROUNDS:
            raise LogError(f"the log asks for {rounds} rounds; {_WHY}, at most {ROUNDS}")
        if isinstance(experts, int) and experts > EXPERTS:
            raise LogError(f"the log asks for {experts} experts; {_WHY}, at most {EXPERTS}")
    class_spec = rules.get("class")
    try:
        hclass = (make_class(class_spec, UNLIMITED if anchored else CLASS_BUDGET)
                  if class_spec else None)
    except LittlestoneError as exc:
        raise LogError(f"the log's class: {exc}" + ("" if anchored else f" ({_WHY})")) from None
    game = GameSpec(rules["game"], rounds, hclass, experts, bool(rules.get("horizon_known", True)))
    if not anchored and game.game == "experts" and game.n_experts > EXPERTS:
        raise LogError(f"the log asks for {game.n_experts} experts; {_WHY}, at most {EXPERTS}")
    return game


# (header, info: a log's, as its reader kept the map it read)
def agent_spec(header: LogHeader, role: str, info: AgentIdentity, anchored: bool) -> str:
    """The spec to rebuild the logged ``role`` from; LogError when the log may not have
    it built: a file agent whose file changed (checked before it is imported), or, for
    a log nothing anchors, a file agent or an agent a server would not build for a peer."""
    spec = str(info["spec"]).strip()
    registry: Registry[Any] = LEARNERS if role == "learner" else ADVERSARIES
    if ".py:" in spec or spec.endswith(".py"):
        if not anchored:
            raise LogError(f"the {role} {spec} is a file agent: a log nothing anchors never "
                           "has a file it names imported (the index of the data folder that "
                           "played it anchors it: --data DIR)")
        file = Path(spec.partition(".py:")[0] + ".py")
        try:
            now = hashlib.sha256(file.read_bytes()).hexdigest()
        except OSError as exc:
            raise LogError(f"the {role} file {file} cannot be read: {exc.strerror}") from None
        if now != info.get("sha256"):
            raise LogError(f"the {role} file {file} changed since the game (sha256 "
                           f"{info.get('sha256')} then, {now} now): it is not imported")
        return spec
    if anchored:
        return spec
    try:
        name, raw = parse_spec(spec)
    except LittlestoneError as exc:
        raise LogError(f"the {role} {spec!r}: {exc}") from None
    if name not in registry or not registry[name].served or set(raw) & registry[name].file_params:
        raise LogError(f"the {role} {spec!r} is not an agent a server builds for a peer "
                       f"(a file, a module or a log it names); {_WHY}")
    if any(p.name == _LDIM_PARAM for p in registry[name].param_info()):
        asked = raw.get(_LDIM_PARAM)
        if asked is None:
            return format_spec(name, {**raw, _LDIM_PARAM: str(LDIM_WORK)})
        if not (asked.isascii() and asked.isdigit()) or int(asked) > LDIM_WORK:
            raise LogError(f"the {role} {spec!r} asks for exact-Ldim work {asked}; {_WHY}, "
                           f"at most {LDIM_WORK}")
    return spec
