"""What a peer may ask a server for: the budgets of a game, and the agents it serves.

Everything here runs before a game exists, on what a peer sent (``challenge`` and
``create``): the rules are checked against the server's :class:`~.settings.Budgets`
before a class is built, no spec may name a file (the server reads and runs nothing a
peer names), and an opponent is a registered built-in that the server serves, or an
agent the operator listed at ``serve`` time. :func:`admit` takes a while for large
classes (it builds the class), so the server runs it in its admissions' lane, never on
its event loop. Whether an agent can play the game is its own question
(``unsupported``): for an agent the server plays in a process of its own (exact Ldim,
a large class: :func:`.hosts.hosted`) it is asked there, within the set-up's budget.

Refusals are :class:`~littlestone.protocol.errors.ProtocolError`: ``over_budget`` for a
request beyond a budget (:class:`~.peers.OverBudget`, which names the budget for the
operator's log), ``unsupported_game`` for anything the server does not serve; their
messages name the request, never a file or a path of the server.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from littlestone.adversaries.base import ADVERSARIES, Adversary
from littlestone.games.agents import Registry
from littlestone.games.classes import ClassBudget, FiniteClass, HalfspaceClass
from littlestone.games.errors import BudgetExceeded, LittlestoneError, OverBudget, ProtocolError
from littlestone.games.game import EXPERTS, GameSpec
from littlestone.games.ldim import checks_per_second
from littlestone.games.spec import format_spec, parse_spec
from littlestone.learners.base import LEARNERS, Learner
from littlestone.learners.conservative import SEPARATOR
from littlestone.learners.kernel import KernelPerceptron
from littlestone.local import HISTORY_IN_MEMORY
from littlestone.protocol.errors import Code
from littlestone.protocol.messages import rules_from_wire
from littlestone.server.net.hosts import hosted
from littlestone.server.net.settings import REMOTE_BLOCK, Budgets
from littlestone.server.records.logs import FULL_ARRAYS_MAX

__all__ = ["Opponents", "admit", "admit_rules", "calibrated", "exact_ldim", "game_disk",
           "game_memory"]

#: A server-side opponent.
Player = Learner | Adversary
#: The parameter of SOA and shattered-tree that bounds their exact-Ldim work.
LDIM_PARAM = "budget"


def calibrated(budgets: Budgets) -> Budgets:
    """The budgets with ``ldim_work`` in instance checks: what ``setup_cpu_s`` buys at
    the solver's speed on this machine (measured once a process:
    :func:`~littlestone.games.ldim.checks_per_second`), unless the operator gave it."""
    if budgets.ldim_work is not None:
        return budgets
    work = max(1, int(budgets.setup_cpu_s * checks_per_second()))
    return dataclasses.replace(budgets, ldim_work=work)


# (rules: a peer's, arbitrary until checked here)
def admit_rules(rules: dict[str, Any], budgets: Budgets) -> GameSpec:
    """The game a ``rules`` map asks for, within ``budgets``; the class is built only
    once its size is known to be within them, and never from a file."""
    rounds, experts = rules.get("rounds"), rules.get("experts")
    if isinstance(rounds, int) and rounds > budgets.max_rounds:
        raise _over("max_rounds", f"{rounds} rounds, over the budget of {budgets.max_rounds}")
    if isinstance(experts, int) and experts > budgets.max_experts:
        raise _over("max_experts", f"{experts} experts, over the budget of "
                    f"{budgets.max_experts}")
    budget = ClassBudget(max_hypotheses=budgets.max_hypotheses,
                         max_dimension=budgets.max_dimension, files=False)
    try:
        game = rules_from_wire(rules, budget)
    except ProtocolError:
        raise
    except BudgetExceeded as exc:
        raise _over("max_hypotheses|max_dimension", str(exc)) from None
    except LittlestoneError as exc:
        raise ProtocolError(Code.UNSUPPORTED_GAME, str(exc)) from None
    if game.game == EXPERTS and game.n_experts > budgets.max_experts:
        raise _over("max_experts", f"{game.n_experts} experts, over the budget of "
                    f"{budgets.max_experts}")
    return game


class Opponents:
    """The agents a server builds for its peers, by name: the registered built-ins that
    may be served (not the adapters, which import modules by name, nor ``replay``, which
    reads logs), with no file parameter, plus the operator's own agents (``serve --agent
    NAME=SPEC``: a built-in with its parameters or a file agent ``FILE.py:Class``;
    trusted, loaded when the server starts, played as they are, without parameters from
    the peer)."""

    def __init__(self, extra: Mapping[str, str] | None = None) -> None:
        self.extra: dict[str, tuple[Registry[Any], str]] = {}
        for name, spec in (extra or {}).items():
            if not name or not all(c.isalnum() or c in "-_." for c in name):
                raise LittlestoneError(f"--agent {name}={spec}: a name of letters, digits, "
                                       "- _ . is required")
            if name in LEARNERS or name in ADVERSARIES:
                raise LittlestoneError(f"--agent {name}={spec}: {name} is a built-in's name")
            try:
                LEARNERS.make(spec)
                registry: Registry[Any] = LEARNERS
            except LittlestoneError:
                ADVERSARIES.make(spec)  # raises SpecError naming the problem
                registry = ADVERSARIES
            self.extra[name] = (registry, spec)

    def names(self, registry: Registry[Any]) -> list[str]:
        """What a peer may name from ``registry``."""
        return sorted([i for i in registry.ids() if registry[i].served]
                      + [n for n, (kind, _) in self.extra.items() if kind is registry])

    def make(self, spec: str, registry: Registry[Any], budgets: Budgets) -> Player:
        """The agent ``spec`` names, if this server serves it (ProtocolError if not)."""
        served = ", ".join(self.names(registry))
        if ".py" in spec or "/" in spec or "\\" in spec:
            raise ProtocolError(Code.UNSUPPORTED_GAME, "opponents are named by id, not by "
                                f"file; this server serves: {served}")
        try:
            name, raw = parse_spec(spec)
        except LittlestoneError as exc:
            raise ProtocolError(Code.UNSUPPORTED_GAME, str(exc)) from None
        if name in self.extra and self.extra[name][0] is registry:
            if raw:
                raise ProtocolError(Code.UNSUPPORTED_GAME, f"{name} is played as the "
                                    "operator set it up: no parameters")
            return _build(registry, self.extra[name][1])
        if name not in registry or not registry[name].served:
            raise ProtocolError(Code.UNSUPPORTED_GAME, f"this server does not serve the "
                                f"{registry.kind} {name!r} (it serves: {served})")
        cls = registry[name]
        named_files = sorted(set(raw) & cls.file_params)
        if named_files:
            raise ProtocolError(Code.UNSUPPORTED_GAME, f"{name}: parameter "
                                f"{', '.join(named_files)} names a file, which this server "
                                "does not open for its peers")
        if any(p.name == LDIM_PARAM for p in cls.param_info()):
            work = budgets.ldim_work or calibrated(budgets).ldim_work
            assert work is not None
            asked = raw.get(LDIM_PARAM)
            if asked is None:
                raw = {**raw, LDIM_PARAM: str(work)}
            elif not (asked.isascii() and asked.isdigit()):
                raise _over("ldim_work", f"{name}: {LDIM_PARAM}={asked} is not a whole "
                            f"number of instance checks up to {work}")
            elif (len(asked.lstrip("0")) > len(str(work))  # (int() of a long one raises)
                  or int(asked.lstrip("0") or "0") > work):
                raise _over("ldim_work", f"{name}: {LDIM_PARAM}={asked} is over the "
                            f"budget of {work} instance checks")
        params: dict[str, object] = dict(raw)
        agent = _build(registry, format_spec(name, params))
        inner = getattr(agent, "inner", None)
        if isinstance(inner, Learner | Adversary):
            # a wrapper (conservative:of=SPEC) plays its inner agent's moves: that agent
            # is held to the budgets as if the peer had named it (its exact-Ldim work
            # within ldim_work, given it if unsaid; its truth table in :func:`admit`)
            param = inner_param(agent)
            asked = raw.get(param)
            held = self.make(asked.replace(SEPARATOR, ",") if asked is not None
                             else type(inner).id, registry, budgets)
            params[param] = held.spec.replace(",", SEPARATOR)
            agent = _build(registry, format_spec(name, params))
        return agent


def inner_param(agent: Player) -> str:
    """The parameter of a wrapper that names the agent it wraps (``of``)."""
    return str(getattr(agent, "positional", None) or "of")


def exact_ldim(agent: Player | None) -> bool:
    """Whether ``agent`` (or the agent it wraps) asks exact Ldim of the class: it then
    builds a truth table of the class and fills the solver's caches.

    >>> exact_ldim(LEARNERS.make("soa")), exact_ldim(LEARNERS.make("conservative:of=soa"))
    (True, True)
    >>> exact_ldim(LEARNERS.make("halving")), exact_ldim(None)
    (False, False)
    """
    while agent is not None:
        if any(p.name == LDIM_PARAM for p in agent.param_info()):
            return True
        inner = getattr(agent, "inner", None)
        agent = inner if isinstance(inner, Learner | Adversary) else None
    return False


def _build(registry: Registry[Any], spec: str) -> Player:
    try:
        agent: Player = registry.make(spec)
    except LittlestoneError as exc:
        raise ProtocolError(Code.UNSUPPORTED_GAME, str(exc)) from None
    agent.served_as = spec  # type: ignore[union-attr]  # (what a host builds it from)
    return agent


def game_memory(game: GameSpec, opponent: Player | None, solver_bytes: int = 0) -> int:
    """An estimate, in bytes, of what one game holds on the server: the class's
    evaluation arrays and version space, an exact-Ldim opponent's truth table and the
    caches it may fill (``solver_bytes``: the solver is the game's own, counted here),
    the blocks of halfspace instances in flight and their history, the experts'
    vectors, a kernel Perceptron's instances and kernel matrices (quadratic in the
    rounds)."""
    hclass = game.hclass
    total = 1 << 20
    if isinstance(hclass, FiniteClass):
        total += 48 * hclass.size
        if exact_ldim(opponent):
            total += 2 * hclass.size * hclass.domain_size + solver_bytes
    elif isinstance(hclass, HalfspaceClass):
        total += 4 * REMOTE_BLOCK * hclass.d * 8 + min(game.rounds * hclass.d * 8,
                                                       HISTORY_IN_MEMORY)
    if game.game == EXPERTS:
        total += 16 * 8 * game.n_experts
    if isinstance(opponent, KernelPerceptron) and hclass is not None:
        # it keeps every instance's features, and its final bound builds kernel matrices
        # of rounds x mistakes entries (and a temporary as large): an adversary may make
        # every round a mistake (realizability is only checked at the reveal)
        total += 2 * 8 * game.rounds * hclass.n_features + 3 * 8 * game.rounds ** 2
    return total


def game_disk(game: GameSpec) -> int:
    """An estimate, in bytes, of the disk one game takes: its log (the instances of a
    halfspace game, the experts' vectors up to FULL_ARRAYS_MAX experts, a few bytes a
    round otherwise) and the history of a halfspace game's instances."""
    per_round = 32
    if isinstance(game.hclass, HalfspaceClass):
        per_round += 2 * 8 * game.hclass.d
    if game.game == EXPERTS:
        per_round += 3 * 8 * min(game.n_experts, FULL_ARRAYS_MAX)
    return game.rounds * per_round


# (rules: a peer's, arbitrary until checked by admit_rules)
def admit(rules: dict[str, Any], opponent: str | None, registry: Registry[Any] | None,
          budgets: Budgets, opponents: Opponents) -> tuple[GameSpec, Player | None]:
    """The game and the server-side opponent a ``challenge`` (or, without an opponent,
    a ``create``) asks for, each within the budgets, the opponent able to play it."""
    game = admit_rules(rules, budgets)
    agent = (opponents.make(opponent, registry, budgets)
             if opponent is not None and registry is not None else None)
    hclass = game.hclass
    if (agent is not None and isinstance(hclass, FiniteClass) and exact_ldim(agent)
            and hclass.size * hclass.domain_size > budgets.max_truth_table):
        raise _over("max_truth_table", f"{agent.spec} on {hclass.spec} needs a truth table of "
                    f"{_count(hclass.size * hclass.domain_size)} cells, over the budget of "
                    f"{budgets.max_truth_table}")
    memory = game_memory(game, agent, budgets.solver_memory_mb << 20)
    if memory > budgets.game_memory_mb << 20:
        raise _over("game_memory_mb", f"the game would hold about {memory >> 20} MiB, over "
                    f"the budget of {budgets.game_memory_mb} MiB")
    disk = game_disk(game)
    if disk > budgets.game_disk_mb << 20:
        raise _over("game_disk_mb", f"the game would write about {disk >> 20} MiB, over "
                    f"the budget of {budgets.game_disk_mb} MiB")
    if agent is not None and not hosted(agent, game):  # (a host asks it, in its process)
        try:
            reason = agent.unsupported(game)
        except LittlestoneError as exc:
            reason = str(exc)
        if reason is not None:
            raise ProtocolError(Code.UNSUPPORTED_GAME, f"{agent.spec} cannot play this "
                                f"game: {reason}")
    return game, agent


def _count(n: int) -> str:
    """A count for a message: in digits up to 10^18, else as a power of two (a class's
    domain may have 2^65536 instances, past what Python converts to a string).

    >>> _count(240), _count(65537 << 65536)
    ('240', 'more than 2^65552')
    """
    return str(n) if n < 10**18 else f"more than 2^{n.bit_length() - 1}"


def _over(budget: str, what: str) -> OverBudget:
    """``over_budget``: ``what`` is over ``budget`` (a field of :class:`Budgets`)."""
    return OverBudget(budget, f"over budget: {what}")
