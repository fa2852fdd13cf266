"""The index's rows as types (:mod:`.database` makes the tables, :mod:`.store` and
:mod:`.tokens` read and write them): games, tokens, tournaments and a tournament's games
(a game's outcome as its runners hand it over, its result, the pairs not played), a
competition's submitted versions; and the rules and agents a log's header names, so
that mypy checks the keys a reader takes from them.

A row read back from SQLite is a plain dict of its columns; :meth:`.store.Store.game`
and its kin narrow it to its type in one place each (a ``SELECT *`` of a table holds
its columns; ``class`` is a Python keyword, hence the functional form):

>>> row: TokenRow = {"name": "ann", "role": "player", "created": "2026-11-25T00:00:00Z"}
>>> sorted(GameRow.__annotations__)[:4]
['adversary', 'bound', 'bound_name', 'chain_hmac']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict, cast

if TYPE_CHECKING:
    from littlestone.games.game import GameResult, ResultFields

__all__ = ["AgentIdentity", "GameOutcome", "GameRow", "GameStart", "LogFooter", "LogHeader",
           "LoggedHeader", "LoggedRules", "ResultColumn", "ResultRow", "Skipped",
           "SubmissionCheck", "SubmissionReport", "SubmissionRow", "TokenRow",
           "TournamentGame", "TournamentRow", "result_row"]

#: A row of the ``games`` table: a game as it started, and its result once it ended
#: (``status`` ``running`` until then; the result's columns None). ``log`` is the log's
#: path made usable from here (:func:`.folder.log_file`); ``chain_sha256`` and
#: ``chain_hmac`` the log's anchor (:mod:`.anchors`); ``owner`` the process that runs it;
#: ``pairing`` the tournament's pairing it is recorded as (``TOURNAMENT|KEY``, unique).
GameRow = TypedDict("GameRow", {
    "game_id": str, "started": str, "finished": str | None, "source": str | None,
    "game": str, "class": str | None, "experts": int | None, "learner": str,
    "adversary": str, "seed": int | None, "horizon": int | None, "rounds": int | None,
    "status": str, "mistakes": float | None, "expected_mistakes": float | None,
    "regret": float | None, "expected_regret": float | None, "bound": float | None,
    "bound_name": str | None, "log": str | None, "chain_sha256": str | None,
    "chain_hmac": str | None, "owner": str | None, "pairing": str | None,
})

#: The columns of a game's row that its result fills (:data:`.store.RESULT_COLUMNS`).
ResultColumn = Literal["rounds", "status", "mistakes", "expected_mistakes", "regret",
                       "expected_regret", "bound", "bound_name"]

class ResultRow(TypedDict, total=False):
    """A game's result as a tournament keeps it: the :data:`ResultColumn` of its index
    row, or only the ``status`` of a game that was not played (an entrant failed to load
    or declined it)."""

    rounds: int | None
    status: str
    mistakes: float | None
    expected_mistakes: float | None
    regret: float | None
    expected_regret: float | None
    bound: float | None
    bound_name: str | None


def result_row(result: GameResult) -> ResultRow:
    """A played game's result as its tournament row keeps it: the keys of ``littlestone
    play --json`` (:meth:`.GameResult.to_dict`), those of :class:`ResultRow` among them;
    the others (the game's and its learner's) are carried along unread."""
    return cast("ResultRow", result.to_dict())


class GameOutcome(TypedDict):
    """How a tournament's game ended, as its runners hand it to the tournament: the game
    (None: not played), its status, a note on it (``message``) and its result."""

    game_id: str | None
    status: str
    message: NotRequired[str]
    result: ResultRow


#: A row of the ``tournament_games`` table: a pairing (game, class, learner, adversary,
#: seed; ``version`` the stamp of the files and rules it was played under, with the
#: files' SHA-256), its :class:`GameOutcome` and the scoring fields of
#: :func:`.tournament.ranking.score` (absent from rows recorded before the scoring rules).
#: Read back, ``log`` is the game's log path (:meth:`.store.Store.tournament_games`) or
#: ``tournament`` its tournament (:meth:`.store.Store.tournament_rows`).
TournamentGame = TypedDict("TournamentGame", {
    "game_id": str | None, "status": str, "message": NotRequired[str], "game": str,
    "class": str | None, "learner": str, "adversary": str, "seed": int,
    "fault": NotRequired[str], "horizon": NotRequired[int], "normaliser": NotRequired[str],
    "normaliser_value": NotRequired[float | None], "raw": NotRequired[float | None],
    "score": NotRequired[float | None], "score_realised": NotRequired[float | None],
    "forcing": NotRequired[float | None], "forcing_realised": NotRequired[float | None],
    "result": ResultRow, "version": NotRequired[str | None],
    "learner_sha256": NotRequired[str | None], "adversary_sha256": NotRequired[str | None],
    "log": NotRequired[str | None], "tournament": NotRequired[str],
})

#: A pair (of one game and class) a tournament does not play, and why: a remote agent
#: against a submission or another remote agent, or a side that declines the class
#: (``declined`` names it: ``learner``, ``adversary`` or ``learner and adversary``).
Skipped = TypedDict("Skipped", {
    "game": str, "class": str | None, "learner": str, "adversary": str, "reason": str,
    "declined": NotRequired[str],
})


#: A game's rules as its log's header keeps them (:func:`.logged.game_info`).
LoggedRules = TypedDict("LoggedRules", {
    "game": str, "class": str | None, "rounds": int, "experts": int | None,
    "horizon_known": bool,
})

#: What :meth:`.store.Store.start_game` indexes of a game as it starts: its rules (those
#: of :data:`LoggedRules` the row keeps; the others are ignored), its players' specs, the
#: game seed, the horizon T and where it was played (``play``, ``server``,
#: ``tournament:NAME``).
GameStart = TypedDict("GameStart", {
    "game": str, "class": NotRequired[str | None], "experts": NotRequired[int | None],
    "rounds": NotRequired[int], "horizon_known": NotRequired[bool],
    "learner": str, "adversary": str, "seed": NotRequired[int | None],
    "horizon": NotRequired[int | None], "source": NotRequired[str],
})


#: An agent as a log's header names it (:func:`.logged.agent_identity`): its spec, its
#: Python class, the SHA-256 of its file (or the package's version) and the file; a
#: remote player's account.
AgentIdentity = TypedDict("AgentIdentity", {
    "spec": str, "class": NotRequired[str], "sha256": NotRequired[str],
    "file": NotRequired[str],
    "account": NotRequired[str | None],
})



class LogHeader(TypedDict):
    """What a game's log begins with (:func:`.logged.log_header`): the game, its rules, its
    players, the game seed S and SHA-256 of the game key (the key itself only in the
    footer). A log read back is data anybody can write: its reader checks these field by
    field (:mod:`.logs.reader`) and keeps the header as the map it read."""

    game_id: str
    package: str
    protocol: int
    started: str
    source: str
    rules: LoggedRules
    seed: int
    key_sha256: str
    learner: AgentIdentity
    adversary: AgentIdentity


class LoggedHeader(LogHeader):
    """A log's header as its reader returns it (:class:`.logs.reader.GameLogData`): the
    :class:`LogHeader`, and what the writer adds (its frame's ``kind`` and ``buffers``,
    the log's ``format`` and ``log_level``; format 1 logs have no ``log_level``)."""

    kind: str
    format: int
    log_level: NotRequired[str]
    buffers: NotRequired[list[Any]]


class LogFooter(TypedDict):
    """What a finished game's log ends with (:func:`.logged.log_footer`): its status and
    result (the keys of ``littlestone play --json``: the game's and its learner's, open),
    the game key (hex) and the target an adversary revealed."""

    status: str
    finished: str
    result: ResultFields
    key: str
    revealed: NotRequired[Any]


class TokenRow(TypedDict):
    """A token as ``littlestone token list`` shows it: never the token, nor its hash."""

    name: str
    role: str
    created: str


class TournamentRow(TypedDict):
    """A tournament of the folder, with the number of games it recorded."""

    name: str
    started: str
    games: int


class SubmissionCheck(TypedDict):
    """One check of a version, as ``littlestone check`` prints it and a submitted
    version's report keeps it (:class:`littlestone.server.tournament.preflight.CheckRow`
    is this type): its name, whether it passed, was skipped or passed with ``advice``,
    its message, what failing it costs in a tournament (``in_tournament``; "" nothing)
    and whether a server ``refereed`` it."""

    check: str
    ok: bool
    skipped: bool
    advice: bool
    message: str
    in_tournament: str
    refereed: bool


class SubmissionReport(TypedDict, total=False):
    """What a version's check found, as its row keeps it (JSON): the verdict's message,
    its checks, the role it loads as (``kind``), whether its run started processes and
    the SHA-256 of the competition file it was checked under (``settings``). A version
    still ``checking`` has ``{}``; one the server could not check only a ``message``."""

    message: str
    checks: list[SubmissionCheck]
    kind: str | None
    forked: bool
    settings: str


class SubmissionRow(TypedDict):
    """A row of the ``submissions`` table (:mod:`.submissions`): a version of an
    account's submission to a competition, its file (``path``, relative to the data
    folder), its check's ``verdict``, ``reason`` and ``report``, and its ``rating``'s
    state (``rated`` and ``rating_started``: when)."""

    id: int
    competition: str
    account: str
    version: int
    agent: str
    sha256: str
    bytes: int
    path: str
    submitted: str
    role: str | None
    verdict: str
    reason: str | None
    report: SubmissionReport
    rating: str
    rated: str | None
    rating_started: str | None
