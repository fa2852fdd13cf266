"""Red team of the agents' hosts: a peer ends games whose server-side agents hold
much memory (it leaves, or its games end at once): the server's loop kills their hosts,
and must not wait there for the kernel to free their memory (45 ms for 500 MiB on this
machine, as long as the loop's admissions and every other game's moves wait)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from littlestone.server.net import hosts as hosts_module

LIMITS = hosts_module.HostLimits(setup_cpu_s=5.0, move_cpu_s=1.0, memory_bytes=256 << 20,
                                 solver_bytes=64 << 20)


async def test_a_killed_hosts_end_is_not_waited_for_on_the_servers_loop():
    host = await asyncio.get_running_loop().run_in_executor(
        None, hosts_module.AgentHost.open, LIMITS)
    loop_thread = threading.get_ident()
    waits: list[bool] = []  # for each wait for its end: whether it was on the loop
    join = host._process.join

    def spied_join(timeout: Any = None) -> None:
        waits.append(threading.get_ident() == loop_thread)
        join(timeout)

    host._process.join = spied_join
    host.kill()  # (as the loop does when its peer leaves)
    for _ in range(200):
        if waits:
            break
        await asyncio.sleep(0.05)
    assert waits == [False]
    assert not host.alive
