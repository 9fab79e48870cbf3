"""The integration matrix's own helpers (tests/integrations/matrix.py), without any framework."""

from __future__ import annotations

import attrs

from tests.integrations.matrix import Framework, normalized, unexpected_tracebacks

FW = Framework(
    key="k",
    name="K",
    packages=(),
    question="q",
    answer="a",
    tool="t",
    follow_up="f",
    follow_up_answer="fa",
    failing_question="fq",
)
LOGGING = attrs.evolve(FW, tool_tracebacks=True)


def traceback(message: str) -> str:
    return (
        "ERROR tool failed\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\n'
        "    raise RuntimeError(...)\n"
        f"RuntimeError: {message}\n"
        "INFO next line\n"
    )


def test_no_traceback_is_allowed_by_default() -> None:
    assert unexpected_tracebacks(FW, "INFO serving\n") == []
    assert len(unexpected_tracebacks(FW, traceback(FW.secret))) == 1


def test_a_framework_that_logs_tool_tracebacks_may_log_only_the_failing_tools() -> None:
    assert unexpected_tracebacks(LOGGING, traceback(LOGGING.secret)) == []
    (found,) = unexpected_tracebacks(LOGGING, traceback(LOGGING.secret) + traceback("KeyError: 3"))
    assert found.endswith("RuntimeError: KeyError: 3")


def test_a_chain_of_exceptions_is_one_traceback_judged_by_its_last() -> None:
    """ADK logs a failing tool's exception inside the chain of its own (DynamicNodeFailError
    during the handling of the tool's): allowed when the chain ends in the secret."""
    link = traceback("DynamicNodeFailError: node failed").replace("INFO next line\n", "")
    during = "\nDuring handling of the above exception, another exception occurred:\n\n"
    chain = link + during + traceback(LOGGING.secret).removeprefix("ERROR tool failed\n")
    assert unexpected_tracebacks(LOGGING, chain) == []
    cause = "\nThe above exception was the direct cause of the following exception:\n\n"
    other = traceback("KeyError: 3").removeprefix("ERROR tool failed\n")
    (found,) = unexpected_tracebacks(LOGGING, link + cause + other)
    assert found.endswith("RuntimeError: KeyError: 3")
    assert len(unexpected_tracebacks(FW, chain)) == 1


def test_ids_are_numbered_and_strings_naming_them_follow() -> None:
    a = [
        {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1", "timestamp": 5},
        {"type": "STATE_SNAPSHOT", "snapshot": {"last": "r1", "city": "Paris"}},
        {"type": "RAW", "event": {"id": "native-1"}, "source": "fw"},
    ]
    b = [
        {"type": "RUN_STARTED", "threadId": "t2", "runId": "r2", "timestamp": 9},
        {"type": "STATE_SNAPSHOT", "snapshot": {"last": "r2", "city": "Paris"}},
        {"type": "RAW", "event": {"id": "native-2"}, "source": "fw"},
    ]
    assert normalized(a) == normalized(b)
    assert normalized(a)[1] == {
        "type": "STATE_SNAPSHOT",
        "snapshot": {"last": "#1", "city": "Paris"},
    }
    changed = [*b[:1], {"type": "STATE_SNAPSHOT", "snapshot": {"last": "r2", "city": "Rome"}}, b[2]]
    assert normalized(a) != normalized(changed)
