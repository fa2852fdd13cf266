"""Issue 41: fresh requests for a competition's answers (tabs opened without
``If-None-Match``) share one render a stamp, viewer and request, instead of one each;
a landed game, another viewer or another request is another render."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from littlestone.server.records.store import Store
from tests.server.web.test_standings_web import NAME, bearer, game, served
from tests.server.web.test_web import get


async def test_fresh_requests_share_one_render_until_something_changes(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        base = f"http://127.0.0.1:{server.port}"
        renders = server.web.renders
        board = f"{base}/competitions/{NAME}?part=board"
        answers = await asyncio.gather(*[get(board, headers=bearer(server, "bob"))
                                         for _ in range(6)])
        assert {status for status, _, _ in answers} == {200}
        assert len({body for _, _, body in answers}) == 1
        assert renders.made == 1  # (main: six renders)
        for path in (f"/api/competitions/{NAME}", f"/competitions/{NAME}/ranking.csv"):
            for _ in range(3):
                assert (await get(base + path, headers=bearer(server, "bob")))[0] == 200
        assert renders.made == 3
        # another viewer sees their own versions: a render of their own
        _, _, mine = await get(board, headers=bearer(server, "ann"))
        assert renders.made == 4 and mine != answers[0][2]
        # a game lands: the next request renders the standings as they now are
        def ann_games(body: bytes) -> int:
            ranking = json.loads(body)["ranking"]
            return int(next(e["games"] for e in ranking if e["entrant"] == "ann"))

        api = f"{base}/api/competitions/{NAME}"
        before = ann_games((await get(api, headers=bearer(server, "bob")))[2])
        Store(tmp_path / "data").add_tournament_game(NAME, "g2", game(
            server.spec, "random-target", 1))
        _, _, body = await get(api, headers=bearer(server, "bob"))
        assert renders.made == 5 and ann_games(body) == before + 1
