"""Commands on the logs and the index: ``games`` and ``replay``."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

from littlestone.cli.common import TerminalSafe, cell, writable
from littlestone.games.errors import ForeignLog, LogCorrupted, LogError, UsageError
from littlestone.server.records import replay as replaying
from littlestone.server.records.anchors import locate
from littlestone.server.records.folder import default_data
from littlestone.server.records.logs import checked, read_log
from littlestone.server.records.resimulation import filled
from littlestone.server.records.store import Store
from littlestone.server.records.verify import verify

__all__ = ["games", "replay"]

EXIT_VERIFY_FAILED, EXIT_FOREIGN, EXIT_CORRUPTED, EXIT_INCOMPLETE = 1, 3, 4, 5


def games(args: argparse.Namespace) -> int:
    if not (Path(args.data) / "littlestone.db").is_file():
        raise UsageError(f"games: no games in {args.data} (no littlestone.db)")
    store = Store(Path(args.data))
    rows = store.games(limit=args.limit, learner=args.learner, adversary=args.adversary,
                       status=args.status, **{"class": getattr(args, "class")})
    # a tournament's games under the names it gave its entrants (a submission's file and
    # class, not its connection's remote:learner-<hash>)
    names = store.tournament_rows([r["game_id"] for r in rows])
    for row in rows:
        if row["game_id"] in names:
            row["learner"] = names[row["game_id"]]["learner"]
            row["adversary"] = names[row["game_id"]]["adversary"]
    if not rows:
        asked = " ".join(f"--{k} {v}" for k in ("learner", "adversary", "class", "status")
                         if (v := getattr(args, k)))
        present = sorted({str(g["status"]) for g in store.games(limit=1000)})
        print(f"littlestone: no games in {args.data} match {asked or 'at all'}"
              + (f" (statuses there: {', '.join(present)})" if present else ""),
              file=sys.stderr)
    if args.json:
        print(json.dumps({"games": rows}))
        return 0

    def num(value: Any) -> str:
        return "-" if value is None else f"{value:.6g}"

    columns = [("game_id", "<"), ("learner", "<"), ("adversary", "<"), ("class", "<"),
               ("rounds", ">"), ("mistakes", ">"), ("regret", ">")]
    cells = [[row["game_id"], row["learner"], row["adversary"], row["class"] or "-",
              num(row["rounds"]), num(row["mistakes"]), num(row["regret"])] for row in rows]
    widths = [max([len(name), *(len(c[i]) for c in cells)]) for i, (name, _) in
              enumerate(columns)]  # whole names: never cut
    print(" ".join(f"{name:{align}{w}}" for (name, align), w in zip(columns, widths,
                                                                    strict=True)) + "  status")
    for row, line in zip(rows, cells, strict=True):
        print(" ".join(f"{c:{align}{w}}" for c, (_, align), w in zip(line, columns, widths,
                                                                     strict=True))
              + f"  {row['status']}")
    return 0


#: The formats ``replay --plot`` writes (by the file's suffix).
PLOT_FORMATS = (".png", ".svg", ".pdf")


def replay(args: argparse.Namespace) -> int:
    if args.page < 1 or args.page_size < 1:
        raise UsageError("replay: --page and --page-size must be >= 1")
    if args.plot:
        if Path(args.plot).suffix.lower() not in PLOT_FORMATS:
            raise UsageError(f"replay: --plot {args.plot}: name a "
                             f"{', '.join(s[1:] for s in PLOT_FORMATS)} file")
        writable(args.plot, "replay: --plot")
    try:
        path, game_id = locate(args.log, args.data or default_data())
        log = checked(read_log(path))
    except ForeignLog as exc:
        print(f"littlestone: error: {TerminalSafe.escape(str(exc))}", file=sys.stderr)
        return EXIT_FOREIGN
    except LogCorrupted as exc:
        print("littlestone: error: " + TerminalSafe.escape(f"{path}: {exc}"), file=sys.stderr)
        return EXIT_VERIFY_FAILED if args.verify else EXIT_CORRUPTED
    except (LogError, OSError) as exc:
        raise UsageError(f"replay: {exc}") from None
    # the index that anchors the log: the one --data names, alone (a forger's own
    # index beside the log must not vouch for it), else the log's neighbour; a game
    # named by its id, the index it was found in
    data = args.data if game_id is None else (args.data or default_data())
    if args.verify:  # (a compact log: its result, re-simulated)
        report = verify(log, data, game_id)
        if args.json:
            print(json.dumps({"verified": report.ok, "message": report.message,
                              "rounds_checked": report.rounds_checked,
                              "anchored": report.anchored, "records_ok": report.records_ok}))
        elif report.ok:
            print("verified: " + report.message)
        else:  # (an unanchored log's message starts with "not anchored: ")
            print(("" if report.anchored is None else "differs: ") + report.message)
        return 0 if report.ok else EXIT_VERIFY_FAILED
    try:
        log = filled(log, data, game_id)  # a compact log's, re-simulated
    except LogError as exc:
        raise UsageError(f"replay: {exc}") from None
    if args.against:
        original, other = replaying.against(log, args.against, data, game_id)
        left, right = dict(original.to_dict()), dict(other.to_dict())
        if args.json:
            print(json.dumps({"original": {"learner": log.header["learner"]["spec"], **left},
                              "against": {"learner": args.against, **right}}))
            return 0
        keys = [k for k in left if k in right and k != "message"]
        width = max(len(k) for k in keys)
        print(f"{'':<{width}}  {log.header['learner']['spec']:>24}  {args.against:>24}")
        for key in keys:
            print(f"{key:<{width}}  {cell(left[key]):>24}  {cell(right[key]):>24}")
        return 0
    if args.plot:
        try:
            replaying.plot(log, args.plot)
        except OSError as exc:
            raise UsageError(f"replay: cannot write {args.plot}: {exc.strerror}") from None
        print(f"wrote {args.plot}", file=sys.stderr)
    elif args.export:
        replaying.export(log, args.export, sys.stdout)
    elif args.json:
        out: dict[str, object] = {
            "game": log.header["rules"]["game"], "learner": log.header["learner"]["spec"],
            "adversary": log.header["adversary"]["spec"],
            "class": log.header["rules"].get("class"), "horizon": log.header["rules"]["rounds"],
            "seed": log.header.get("seed"), "game_id": log.header.get("game_id"),
            "log": str(path), "rounds_logged": log.n_rounds, "status": log.status}
        out.update(log.result)
        out["status"] = log.status
        print(json.dumps(out))
    else:
        pages = max(1, -(-log.n_rounds // args.page_size))
        if args.page > pages:
            raise UsageError(f"replay: --page {args.page}: the log has {log.n_rounds} rounds, "
                             f"{pages} page(s) of {args.page_size}")
        print(replaying.summary_table(log), end="")
        first = (args.page - 1) * args.page_size
        shown = list(itertools.islice(replaying.rows(log), first, first + args.page_size))
        if shown:
            print()
            keys = [k for k in shown[0] if k not in ("advice", "weights", "costs")]
            print("  ".join(f"{k:>10}" for k in keys))
            for row in shown:
                print("  ".join(f"{cell(row[k]):>10}" for k in keys))
            print(f"(rounds {first + 1}-{first + len(shown)} of {log.n_rounds}; "
                  f"page {args.page} of {pages}: --page N)")
    if log.footer is None:
        print(f"littlestone: warning: {TerminalSafe.escape(str(path))} is incomplete: "
              f"{log.n_rounds} whole rounds, no footer ({log.trailing} bytes cut off)",
              file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0
