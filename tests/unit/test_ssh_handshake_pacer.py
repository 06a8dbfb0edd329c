"""The handshake pacer's arithmetic: per sshd, halved on a drop, raised after a limit's worth of
successes; a cap in all. (Against a real sshd: tests/integration/test_ssh_pacing.py.)"""

from __future__ import annotations

import threading
import time

from pytest_fabric.transport.ssh.pacing import HandshakePacer

A = ("10.0.0.1", 22)
B = ("10.0.0.2", 22)


def test_a_drop_halves_what_was_running_and_successes_win_it_back_slowly() -> None:
    pacer = HandshakePacer(per_sshd=8, in_all=100)
    with pacer.slot(A), pacer.slot(A), pacer.slot(A), pacer.slot(A):
        pacer.dropped(A)  # 4 were running when sshd dropped one: it allows about 2
    assert pacer.limit(A) == 2
    assert pacer.limit(B) == 8  # another sshd is not affected
    pacer.succeeded(A)
    assert pacer.limit(A) == 2  # one success is not yet a limit's worth
    pacer.succeeded(A)
    assert pacer.limit(A) == 3
    for _ in range(100):
        pacer.succeeded(A)
    assert pacer.limit(A) == 8  # never above per_sshd


def test_never_below_one() -> None:
    pacer = HandshakePacer(per_sshd=8, in_all=100)
    for _ in range(5):
        pacer.dropped(A)
    assert pacer.limit(A) == 1


def _running_at_most(
    pacer: HandshakePacer, endpoints: list[tuple[str, int]], **kwargs: bool
) -> int:
    """Start a thread per endpoint that holds a slot for 50 ms; the most that held one at once."""
    lock = threading.Lock()
    now = peak = 0

    def hold(endpoint: tuple[str, int]) -> None:
        nonlocal now, peak
        with pacer.slot(endpoint, **kwargs):
            with lock:
                now += 1
                peak = max(peak, now)
            time.sleep(0.05)
            with lock:
                now -= 1

    threads = [threading.Thread(target=hold, args=(e,)) for e in endpoints]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return peak


def test_slots_per_sshd_and_in_all() -> None:
    assert _running_at_most(HandshakePacer(per_sshd=3, in_all=100), [A] * 12) == 3
    many = [(f"10.0.1.{i}", 22) for i in range(12)]
    assert _running_at_most(HandshakePacer(per_sshd=8, in_all=4), many) == 4
    # through a jump host: held to the sshd's limit only, never to the cap in all
    assert _running_at_most(HandshakePacer(per_sshd=8, in_all=2), many, count_in_all=False) > 2
