"""The Run tab's status line: the round in play, its answers, time taken and left."""

from __future__ import annotations

from workbench.ui.run_clock import RunClock, duration, seconds_between


def test_the_round_in_play_is_named_not_the_rounds_finished() -> None:
    clock = RunClock("running", rounds_done=1, rounds=3, n_agents=1000, answered=400,
                     elapsed_s=70.0)  # fmt: skip
    parts = clock.parts()
    assert parts[0] == "round 2 of 3" and parts[1] == "400 of 1,000 answers in"
    assert parts[2] == "1 min 10 s so far"
    # 1.4 of 3 agent-rounds in 70 s: 150 s in all at this pace, 80 s left
    assert clock.done_share() == (1 + 0.4) / 3
    assert parts[3] == "about 1 min 20 s left at this run's pace"


def test_the_estimate_says_the_time_left_when_there_is_one() -> None:
    clock = RunClock("running", 0, 3, n_agents=10, answered=0, elapsed_s=100.0, estimate_s=412.0)
    assert clock.parts()[-1] == "about 5 min 12 s left by the estimate"
    late = RunClock("running", 2, 3, n_agents=10, answered=9, elapsed_s=500.0, estimate_s=412.0)
    assert late.left_s() == (0.0, "by the estimate")
    assert RunClock("running", 0, 3, n_agents=10, elapsed_s=5.0).left_s() is None  # nothing in


def test_a_finished_run_says_how_long_it_took_beside_its_estimate() -> None:
    done = RunClock("complete", 3, 3, n_agents=10, answered=10, elapsed_s=320.0, estimate_s=412.0)
    assert done.parts() == ["3 of 3 rounds", "took 5 min 20 s (estimated 6 min 52 s)"]
    dead = RunClock("dead", 1, 3, elapsed_s=None)
    assert dead.parts() == ["1 of 3 rounds"]


def test_durations_and_times_in_words() -> None:
    assert [duration(s) for s in (0, 44.6, 60, 3599, 3600, 7322)] == [
        "0 s", "45 s", "1 min 00 s", "59 min 59 s", "1 h 00 min", "2 h 02 min",
    ]  # fmt: skip
    start = "2026-12-07T05:00:00.000+00:00"
    assert seconds_between(start, "2026-12-07T05:05:20.500+00:00") == 320.5
    assert seconds_between(None) is None and seconds_between("garbage") is None


def test_the_status_line_escapes_and_says_what_to_do_when_idle() -> None:
    from workbench.ui.run_clock import IDLE, status_line

    assert status_line("", None, None) == IDLE
    clock = RunClock("running", 0, 2, n_agents=4, answered=1, elapsed_s=3.0)
    line = status_line("running", clock, "results/<b>x</b>")
    assert line.startswith("**running** · round 1 of 2 · 1 of 4 answers in") and "<b>" not in line
