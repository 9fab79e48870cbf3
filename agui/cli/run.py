"""`agui run` (post a run to an agent; print what streams back, every event, or a summary) and
`agui replay` (process a recorded stream without a server; `-` reads standard input).

Every mode of `agui run` goes through the same client pipeline (a Conversation: decoding, chunk
expansion, verification, the reducer) and ends with the same outcome as `--summary`: completed
or interrupt exit 0, error or failed exit 1, a usage error 2. The plain mode prints what a person
needs as it arrives: the text (chunks included), reasoning (dimmed), tool calls with their
arguments and results, and an interrupt with the command that answers it; the outcome, its
reason and the warnings go to stderr. ANSI styling only when stdout is a terminal (and NO_COLOR is
not set).

An interrupted run saves the thread so far to a file, for the command that answers it
(`--input FILE --resume answers.json`): in THREADS (`$XDG_STATE_HOME/agui/threads`, by default
`~/.local/state/agui/threads`), or where `--thread-file` says. A file of THREADS given back as
`--input` is removed once the run that continues the thread completes or is interrupted again
(which saves a new one); files there older than THREAD_FILE_DAYS are removed when a new one is
written.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

# Everything heavy (the models, the codec, httpx, the client pipeline) is imported where it is
# used: `import agui.cli.run` stays cheap, and `agui replay` never loads httpx
# (tests/test_cli_options.py).
if TYPE_CHECKING:
    from agui_generated import Interrupt, ResumeEntry, RunAgentInput

    from agui.http.client import HttpAgent, StreamPosition
    from agui.stream.conversation import Conversation

__all__ = [
    "SUCCESSFUL",
    "THREAD_FILE_DAYS",
    "Output",
    "agent_for",
    "build_input",
    "print_interrupts",
    "rejoin",
    "replay",
    "run",
    "threads_dir",
]

SUCCESSFUL = ("completed", "interrupt")
"""The summary outcomes that exit 0: the runs ended as the agent meant them to."""


# ── the input ─────────────────────────────────────────────────────────────────────────────────


def build_input(args: argparse.Namespace) -> RunAgentInput:
    """The run's input: the --input file, or a user message (--message, default "hello") in a
    new thread; then --state, --forwarded-props and --resume, when given, replace the input's.
    Raises OSError, DecodeError (a file) or ValueError (an option's JSON)."""
    import attrs
    from agui_generated import PROTOCOL_VERSION, RunAgentInput, UserMessage

    from agui.wire.codec import decode

    if getattr(args, "input", None):
        with open(args.input, "rb") as fh:
            run_input: RunAgentInput = decode(fh.read(), RunAgentInput)
    else:
        text = getattr(args, "message", None) or "hello"
        run_input = RunAgentInput(
            thread_id=f"thread-{uuid.uuid4().hex[:12]}",
            run_id=f"run-{uuid.uuid4().hex[:12]}",
            protocol_version=PROTOCOL_VERSION,
            messages=(UserMessage(id=f"user-{uuid.uuid4().hex[:12]}", content=text),),
        )
    changes: dict[str, Any] = {}
    if getattr(args, "state", None) is not None:
        changes["state"] = _json_option(args.state, "--state")
    if getattr(args, "forwarded_props", None) is not None:
        changes["forwarded_props"] = _json_option(args.forwarded_props, "--forwarded-props")
    if getattr(args, "resume", None) is not None:
        changes["resume"] = _resume_entries(args.resume)
    return attrs.evolve(run_input, **changes) if changes else run_input


def _json_option(text: str, option: str) -> Any:
    import orjson

    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"{option} is not valid JSON: {exc}") from None
    if value is None:
        raise ValueError(f"{option} cannot be null (leave the option out instead)")
    return value


def _resume_entries(path: str) -> tuple[ResumeEntry, ...]:
    """The ResumeEntry objects of a --resume file: a JSON list of them, or one object."""
    import orjson
    from agui_generated import DecodeError, ResumeEntry

    from agui.wire.codec import decode_json

    try:
        with open(path, "rb") as fh:
            value = orjson.loads(fh.read())
    except OSError as exc:
        raise ValueError(f"cannot read --resume {path}: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"--resume {path} is not valid JSON: {exc}") from None
    entries: list[ResumeEntry] = []
    for index, item in enumerate(value if isinstance(value, list) else [value]):
        try:
            entries.append(decode_json(item, ResumeEntry, strict=True))
        except DecodeError as exc:
            where = f"entry {index + 1}" if isinstance(value, list) else "the entry"
            problems = "; ".join(str(p) for p in exc.problems[:3])
            raise ValueError(
                f"--resume {path}: {where} is not a ResumeEntry "
                f'({{"interruptId", "status": "resolved" | "cancelled", "payload"?}}): {problems}'
            ) from None
    return tuple(entries)


def _prepare(args: argparse.Namespace) -> tuple[RunAgentInput, HttpAgent] | str:
    """The input and the agent of `agui run`, or the one-line usage error."""
    from agui_generated import DecodeError

    if args.message is not None and args.input:
        return "--message cannot be used with --input (the input file holds the messages)"
    if args.timeout is not None and not args.timeout > 0:
        return f"--timeout must be a positive number of seconds, not {args.timeout:g}"
    try:
        run_input = build_input(args)
    except OSError as exc:
        return f"cannot read --input {args.input}: {exc.strerror or exc}"
    except DecodeError as exc:
        problems = "; ".join(str(p) for p in exc.problems[:3])
        return f"--input {args.input} is not a RunAgentInput: {problems}"
    except ValueError as exc:
        return str(exc)
    agent = agent_for(args)
    return agent if isinstance(agent, str) else (run_input, agent)


# ── agui run ──────────────────────────────────────────────────────────────────────────────────


def run(args: argparse.Namespace) -> int:
    """`agui run`: the exit status is the outcome's (see the module docstring)."""
    if args.rejoin is not None:
        return rejoin(args)
    if args.after is not None:
        print("agui run: --after goes with --rejoin RUN_ID", file=sys.stderr)
        return 2
    prepared = _prepare(args)
    if isinstance(prepared, str):
        print(f"agui run: {prepared}", file=sys.stderr)
        return 2
    from agui.stream.conversation import Conversation

    run_input, agent = prepared
    output = Output(args)
    seed: dict[str, Any] = {} if run_input.state is None else {"state": run_input.state}
    conversation = Conversation(
        run_input.thread_id,
        messages=run_input.messages,
        keep_events=args.summary,
        keep_partial=True,  # the command shows what arrived, a failed run's too
        on_event=output.watch,
        **seed,
    )
    saved: list[str] = []

    def waiting(out: TextIO, styled: bool) -> None:
        saved.append(
            print_interrupts(
                out, styled, conversation, run_input, args.url, getattr(args, "thread_file", None)
            )
        )

    code = output.finish(
        "agui run", conversation, conversation.run(agent, input=run_input), waiting
    )
    if args.input and conversation.outcome()[0] in SUCCESSFUL:
        _used(args.input, saved)
    return code


class Output:
    """What the streaming commands (`agui run`, `agui connect`) print, by mode: plain (what a
    person needs, as it arrives; `transcript`: messages that arrive whole too), `--json` (every
    delivered event) or `--summary` (one JSON object at the end)."""

    def __init__(self, args: argparse.Namespace, *, transcript: bool = False) -> None:
        self.args = args
        self.styled = _styled(sys.stdout)
        self.printer = _Printer(sys.stdout, self.styled, transcript=transcript)
        self.watch: Callable[[Any], None] = (
            _ignore if args.summary else _JsonLines(sys.stdout) if args.json else self.printer
        )

    def finish(
        self,
        command: str,
        conversation: Conversation,
        stream: Coroutine[Any, Any, Any],
        waiting: Callable[[TextIO, bool], None],
        summary: Callable[[dict[str, Any]], dict[str, Any]] = lambda s: s,
    ) -> int:
        """Run `stream` (which applies to `conversation`), print the end of the mode (the
        summary, or `waiting` for an interrupt: what the run waits for and how to answer), the
        warnings and the outcome line; return the exit status."""
        import asyncio

        from agui.wire.codec import dumps

        args = self.args
        try:
            try:
                asyncio.run(stream)
            except BrokenPipeError:
                raise
            except Exception:  # recorded in conversation.failures; the outcome reports it
                pass
            outcome, reason = conversation.outcome()
            if args.summary:
                sys.stdout.buffer.write(dumps(summary(conversation.summary())) + b"\n")
            elif not args.json:
                self.printer.close()
                if outcome == "interrupt":
                    waiting(sys.stdout, self.styled)
            sys.stdout.flush()
        except BrokenPipeError:  # stdout's reader left (`agui run URL | head -1`): stop quietly
            _quiet_stdout()
            return 0
        if not args.summary and not args.json:
            for warning in conversation.warnings:
                at = "" if warning.event is None else f"event {warning.event}: "
                print(f"{command}: warning: {at}{warning.message}", file=sys.stderr)
        if not args.summary and (not args.json or outcome not in SUCCESSFUL):
            print(f"{command}: {_outcome_line(outcome, reason, conversation)}", file=sys.stderr)
        return 0 if outcome in SUCCESSFUL else 1


def agent_for(args: argparse.Namespace) -> HttpAgent | str:
    """The HttpAgent of a command (URL, --timeout, and where the command has them --header and
    --binary), or the one-line usage error."""
    if args.timeout is not None and not args.timeout > 0:
        return f"--timeout must be a positive number of seconds, not {args.timeout:g}"
    headers: dict[str, str] = {}
    for header in getattr(args, "header", None) or ():
        name, colon, value = header.partition(":")
        if not colon or not name.strip() or not _TOKEN.fullmatch(name.strip()):
            return f"--header takes 'Name: value', not {header!r}"
        if "\r" in value or "\n" in value:
            return f"--header {name.strip()}: a value cannot hold a line break"
        headers[name.strip()] = value.strip()
    _import_httpx_without_its_cli()
    from agui.http.client import HttpAgent

    options: dict[str, Any] = {"headers": headers, "binary": bool(getattr(args, "binary", False))}
    if args.timeout is not None:
        options["timeout"] = args.timeout
    return HttpAgent(args.url, **options)


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP header name (RFC 9110's token)."""


def _import_httpx_without_its_cli() -> None:
    """Import httpx without its own command line: httpx's __init__ imports `httpx._main` (click
    and pygments, and rich) whenever those are installed (uvicorn brings click), which was a
    quarter of its import time (17 of 70 ms; 60 ms more without bytecode caches), and no agui
    command calls `httpx.main`. The submodule is marked missing while httpx is imported (httpx
    then defines the stub it has for that case) and unmarked after, so that a later
    `import httpx._main` works."""
    if "httpx" in sys.modules or "httpx._main" in sys.modules:
        return
    sys.modules["httpx._main"] = None  # type: ignore[assignment]
    try:
        import httpx  # noqa: F401
    finally:
        if "httpx._main" in sys.modules and sys.modules["httpx._main"] is None:
            del sys.modules["httpx._main"]


# ── agui run --rejoin ─────────────────────────────────────────────────────────────────────────

_NOT_WITH_REJOIN = ("message", "input", "state", "forwarded_props", "resume")


def rejoin(args: argparse.Namespace) -> int:
    """`agui run URL --rejoin RUN_ID [--after CURSOR]`: a run the server keeps, read again from
    its start (GET {url}/runs/{runId}/events) and processed like `agui run`'s stream. With
    --after, only what comes after that event id is shown (and listed in the summary's events);
    the run is still read whole, so that the client checks it whole, and the messages, state and
    outcome are the run's."""
    for name in _NOT_WITH_REJOIN:
        if getattr(args, name) is not None:
            option = "--" + name.replace("_", "-")
            print(
                f"agui run: {option} cannot be used with --rejoin (it reads a run that exists)",
                file=sys.stderr,
            )
            return 2
    agent = agent_for(args)
    if isinstance(agent, str):
        print(f"agui run: {agent}", file=sys.stderr)
        return 2
    from agui.http.client import StreamPosition
    from agui.stream.conversation import Conversation

    output = Output(args)
    gate = _After(output.watch, args.after)
    conversation = Conversation(keep_events=False, keep_partial=True, on_event=gate)
    position = StreamPosition()
    run_id: str = args.rejoin

    async def stream() -> None:
        frames = agent.rejoin_frames(run_id, position=position)
        try:
            await conversation.follow(gate.frames(frames, position), strict=agent.strict)
        finally:
            if args.after is not None and not gate.open:
                conversation.failures.append(
                    f"Event id {args.after} is not in the stream of run {run_id}."
                )

    def waiting(out: TextIO, styled: bool) -> None:
        printer = _Printer(out, styled)
        _print_waiting(printer, conversation.pending_interrupts)
        thread = gate.thread_id or "THREAD"
        printer.line("To answer, connect to the thread, which shows how:")
        printer.line(f"  {shlex.join(['agui', 'connect', args.url, thread])}")
        out.flush()

    def summary(value: dict[str, Any]) -> dict[str, Any]:
        from agui.wire.codec import to_json

        return value | {
            "events": [to_json(e) for e in gate.kept],
            "eventTypes": [str(e.type) for e in gate.kept],
        }

    return output.finish("agui run", conversation, stream(), waiting, summary)


class _After:
    """--after CURSOR: the events are shown (and kept for the summary) only once the frame with
    that id has gone by; without it, all of them."""

    def __init__(self, watch: Callable[[Any], None], cursor: str | None) -> None:
        from agui_generated import RunStartedEvent

        self.started = RunStartedEvent
        self.watch = watch
        self.cursor = cursor
        self.open = cursor is None
        self.kept: list[Any] = []
        self.thread_id: str | None = None

    def __call__(self, event: Any) -> None:
        if isinstance(event, self.started):
            self.thread_id = event.thread_id
        if self.open:
            self.kept.append(event)
            self.watch(event)

    async def frames(
        self, frames: AsyncIterator[Any], position: StreamPosition
    ) -> AsyncIterator[Any]:
        """The frames, opening the gate after the one whose id is the cursor (each frame is
        applied, and shown or not, before the next is asked for)."""
        try:
            async for frame in frames:
                yield frame
                if not self.open and position.last_event_id == self.cursor:
                    self.open = True
        finally:
            if isinstance(frames, AsyncGenerator):
                await frames.aclose()


def _ignore(event: Any) -> None:
    pass


def _outcome_line(outcome: str, reason: str | None, conversation: Conversation) -> str:
    if outcome == "interrupt":
        count = len(conversation.pending_interrupts)
        return f"interrupt: the run waits for {count} answer{'s' if count != 1 else ''}"
    return outcome if reason is None else f"{outcome}: {reason}"


def _quiet_stdout() -> None:
    """Point stdout at the null device, so the interpreter's last flush of what is still
    buffered does not fail again ("Exception ignored ... BrokenPipeError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


class _JsonLines:
    """--json: every delivered event as one JSON line, as it is applied."""

    def __init__(self, out: TextIO) -> None:
        from agui.wire.codec import encode

        self.out = out
        self.encode = encode

    def __call__(self, event: Any) -> None:
        self.out.write(self.encode(event).decode() + "\n")
        self.out.flush()


# ── the plain mode ────────────────────────────────────────────────────────────────────────────

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_DIM = "\x1b[2m"
_CYAN = "\x1b[36m"
_YELLOW = "\x1b[33m"


def _styled(stream: TextIO) -> bool:
    """ANSI styling only on a terminal, and never when NO_COLOR is set (no-color.org)."""
    try:
        return stream.isatty() and not os.environ.get("NO_COLOR")
    except (AttributeError, ValueError):
        return False


class _Printer:
    """What a person needs, as it arrives: text, reasoning (dimmed), tool calls (with their
    arguments, when complete) and their results. Events come after chunk expansion, so text sent
    as chunks is printed too. With `transcript` (`agui connect`), messages that arrive whole (a
    MESSAGES_SNAPSHOT, a RUN_STARTED's input) are printed too, each once: user and system
    messages with their role, the rest as when streamed."""

    def __init__(self, out: TextIO, styled: bool, *, transcript: bool = False) -> None:
        import agui_generated

        self.models = agui_generated
        self.out = out
        self.styled = styled
        self.transcript = transcript
        self.fresh = True  # at the start of a line
        self.calls: dict[str, tuple[str, list[str]]] = {}  # id -> (name, argument pieces)
        self.shown: set[str] = set()  # with transcript: the messages and tool calls printed

    def style(self, text: str, code: str) -> str:
        return f"{code}{text}{_RESET}" if self.styled and text else text

    def write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.fresh = text.endswith("\n")

    def line(self, text: str) -> None:
        self.close()
        self.write(text + "\n")

    def close(self) -> None:
        """End the current line, if one is open."""
        if not self.fresh:
            self.write("\n")

    def __call__(self, event: Any) -> None:
        m = self.models
        if isinstance(event, m.TextMessageStartEvent):
            self.close()
            self.shown.add(event.message_id)
            role = event.role or m.TextMessageRole.ASSISTANT
            if role is not m.TextMessageRole.ASSISTANT:
                self.write(self.style(f"{role.value}: ", _BOLD))
        elif isinstance(event, m.TextMessageContentEvent):
            self.write(event.delta)
        elif isinstance(event, m.ReasoningMessageStartEvent):
            self.close()
            self.shown.add(event.message_id)
            self.write(self.style("reasoning: ", _DIM))
        elif isinstance(event, m.ReasoningMessageContentEvent):
            self.write(self.style(event.delta, _DIM))
        elif isinstance(event, m.TextMessageEndEvent | m.ReasoningMessageEndEvent):
            self.close()
        elif isinstance(event, m.ToolCallStartEvent):
            self.shown.add(event.tool_call_id)
            self.calls[event.tool_call_id] = (event.tool_call_name, [])
        elif isinstance(event, m.ToolCallArgsEvent) and event.tool_call_id in self.calls:
            self.calls[event.tool_call_id][1].append(event.delta)
        elif isinstance(event, m.ToolCallEndEvent) and event.tool_call_id in self.calls:
            name, pieces = self.calls[event.tool_call_id]
            self.line(self.style(f"tool call: {name}({''.join(pieces)})", _CYAN))
        elif isinstance(event, m.ToolCallResultEvent):
            self.shown.add(event.message_id)
            self.line(self.style(f"tool result: {_content_text(event.content)}", _CYAN))
        elif self.transcript and isinstance(event, m.MessagesSnapshotEvent):
            for message in event.messages:
                self.message(message)
        elif self.transcript and isinstance(event, m.RunStartedEvent) and event.input is not None:
            for message in event.input.messages:
                self.message(message)
        else:
            return
        self.out.flush()

    def message(self, message: Any) -> None:
        """A whole message, unless it was printed already (with transcript)."""
        m = self.models
        if message.id in self.shown:
            return
        self.shown.add(message.id)
        if isinstance(message, m.UserMessage | m.SystemMessage | m.DeveloperMessage):
            role = {
                m.UserMessage: "user",
                m.SystemMessage: "system",
                m.DeveloperMessage: "developer",
            }
            self.line(
                self.style(f"{role[type(message)]}: ", _BOLD) + _content_text(message.content)
            )
        elif isinstance(message, m.AssistantMessage):
            if message.content:
                self.line(message.content)
            for call in message.tool_calls or ():
                if call.id not in self.shown:
                    self.shown.add(call.id)
                    text = f"tool call: {call.function.name}({call.function.arguments})"
                    self.line(self.style(text, _CYAN))
        elif isinstance(message, m.ToolMessage):
            self.line(self.style(f"tool result: {_content_text(message.content)}", _CYAN))
        elif isinstance(message, m.ReasoningMessage):
            self.line(self.style("reasoning: ", _DIM) + self.style(message.content, _DIM))


def _content_text(content: Any) -> str:
    """A tool result's content as text: a string as it is; parts as their text, or their kind."""
    import agui_generated as m

    if isinstance(content, str):
        return content
    return " ".join(
        part.text if isinstance(part, m.TextPart) else f"[{part.type}]" for part in content
    )


def print_interrupts(
    out: TextIO,
    styled: bool,
    conversation: Conversation,
    run_input: RunAgentInput,
    url: str,
    thread_file: str | None = None,
) -> str:
    """What the run waits for, and the exact command that answers it: the thread so far is saved
    to a file (the agent needs the history to resume; `thread_file`, else a new file in
    `threads_dir()`), the answers go in a --resume file. Returns the thread file's path."""
    from agui.wire.codec import dumps

    printer = _Printer(out, styled)
    interrupts = conversation.pending_interrupts
    _print_waiting(printer, interrupts)
    thread = _save_thread(conversation, run_input, thread_file)
    entries = b",".join(dumps(_answer_example(i)) for i in interrupts)
    printer.line("To answer, write a JSON file with one entry per interrupt, e.g. answers.json:")
    printer.line(f"  [{entries.decode()}]")
    printer.line('(an entry with "status": "cancelled" and no "payload" gives up on an interrupt)')
    printer.line("then run:")
    command = shlex.join(["agui", "run", url, "--input", thread, "--resume", "answers.json"])
    printer.line(f"  {command}")
    out.flush()
    return thread


def _print_waiting(printer: _Printer, interrupts: tuple[Interrupt, ...]) -> None:
    """What the run waits for: each interrupt, its reason, message, tool call, schema, expiry."""
    from agui.wire.codec import dumps

    printer.line(printer.style(f"interrupt: the run waits for {len(interrupts)} answer(s)", _BOLD))
    for interrupt in interrupts:
        said = "" if interrupt.message is None else f": {interrupt.message}"
        printer.line(printer.style(f"  {interrupt.id} ({interrupt.reason})", _YELLOW) + said)
        if interrupt.tool_call_id is not None:
            printer.line(f"    tool call: {interrupt.tool_call_id}")
        if interrupt.response_schema is not None:
            printer.line(f"    answer schema: {dumps(interrupt.response_schema).decode()}")
        if interrupt.expires_at is not None:
            printer.line(f"    expires at: {interrupt.expires_at}")


# ── thread files ──────────────────────────────────────────────────────────────────────────────

THREAD_FILE_DAYS = 7
"""A thread file in threads_dir() older than this many days is removed when a new one is
written there (an interrupt nobody answered)."""


def threads_dir() -> Path:
    """Where `agui run` and `agui connect` save the thread of an interrupted run:
    `$XDG_STATE_HOME/agui/threads` (an absolute XDG_STATE_HOME), else `%LOCALAPPDATA%\\agui\\
    threads` on Windows, else `~/.local/state/agui/threads`."""
    base = os.environ.get("XDG_STATE_HOME", "")
    if base and os.path.isabs(base):
        root = Path(base)
    elif sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        root = Path(os.environ["LOCALAPPDATA"])
    else:
        root = Path.home() / ".local" / "state"
    return root / "agui" / "threads"


def _save_thread(
    conversation: Conversation, run_input: RunAgentInput, path: str | None = None
) -> str:
    """Write the input that continues this thread (a new run id, the messages and state so far,
    the same tools, context and forwardedProps) to `path`, or to a new file in threads_dir()
    (the temporary directory when that cannot be written, said on stderr); return its path."""
    import tempfile

    from agui_generated import ActivityMessage, RunAgentInput

    from agui.wire.codec import encode

    follow = RunAgentInput(
        thread_id=conversation.thread_id,
        run_id=f"run-{uuid.uuid4().hex[:12]}",
        protocol_version=run_input.protocol_version,
        state=conversation.state,
        messages=tuple(m for m in conversation.messages if not isinstance(m, ActivityMessage)),
        tools=run_input.tools,
        context=run_input.context,
        forwarded_props=run_input.forwarded_props,
    )
    data = encode(follow) + b"\n"
    if path is not None:
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
            fh.write(data)
        return path
    folder = threads_dir()
    prefix = re.sub(r"[^A-Za-z0-9._-]+", "_", conversation.thread_id)[:64] + "-"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        _prune(folder)
        handle, saved = tempfile.mkstemp(prefix=prefix, suffix=".json", dir=folder)
    except OSError as exc:
        print(
            f"agui: cannot write to {folder} ({exc.strerror or exc}); the thread is saved in the "
            "temporary directory instead",
            file=sys.stderr,
        )
        handle, saved = tempfile.mkstemp(prefix="agui-thread-", suffix=".json")
    with os.fdopen(handle, "wb") as fh:
        fh.write(data)
    return saved


def _prune(folder: Path) -> None:
    """Remove the thread files of `folder` older than THREAD_FILE_DAYS."""
    oldest = time.time() - THREAD_FILE_DAYS * 86400
    for entry in folder.glob("*.json"):
        try:
            if entry.stat().st_mtime < oldest:
                entry.unlink()
        except OSError:
            pass


def _used(input_file: str, saved: list[str]) -> None:
    """The run that continued the thread of `input_file` completed or was interrupted again: a
    thread file of threads_dir() is done with (another was saved if need be); remove it. A file
    anywhere else is the user's, and stays."""
    try:
        used = Path(input_file).resolve()
        if used.parent != threads_dir().resolve() or any(Path(s).resolve() == used for s in saved):
            return
        used.unlink()
    except OSError:
        pass


def _answer_example(interrupt: Interrupt) -> dict[str, Any]:
    return {
        "interruptId": interrupt.id,
        "status": "resolved",
        "payload": _example(interrupt.response_schema),
    }


def _example(schema: Any) -> Any:
    """A value of the shape a JSON Schema asks for (its required members), to fill in."""
    if not isinstance(schema, dict):
        return "your answer"
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required = schema.get("required")
        names = required if isinstance(required, list) else list(properties)
        return {str(name): _example(properties.get(name)) for name in names}
    examples: dict[str, Any] = {
        "boolean": True,
        "string": "...",
        "integer": 0,
        "number": 0,
        "array": [],
    }
    return examples.get(str(kind), "your answer")


# ── agui replay ───────────────────────────────────────────────────────────────────────────────


def _report(conversation: Conversation, summary: bool) -> int:
    """Print the summary (or the delivered events and the error); return the exit code: 0 when
    the outcome is completed or interrupt, 1 for error or failed."""
    from agui.wire.codec import dumps

    result = conversation.summary()
    out = sys.stdout.buffer
    if summary:
        out.write(dumps(result) + b"\n")
    else:
        for event in result["events"]:
            out.write(dumps(event) + b"\n")
    out.flush()
    if result["error"] is not None and not summary:
        print(f"agui: {result['error']}", file=sys.stderr)
    return 0 if result["outcome"] in SUCCESSFUL else 1


def _recorded(data: bytes) -> Iterator[Any]:
    """The events of a recording: JSON Lines, a JSON array, or an SSE capture (by content)."""
    import orjson
    from agui_generated import DecodeError, Problem

    from agui.wire.sse import SSEDecoder

    body = data.removeprefix(b"\xef\xbb\xbf")
    head = body.lstrip()[:1]
    if head == b"{":
        for line in body.splitlines():
            if line.strip():
                yield line
    elif head == b"[":
        try:
            items = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise DecodeError([Problem("", "json", f"not valid JSON: {exc}")]) from None
        yield from items
    else:
        decoder = SSEDecoder()
        for message in [*decoder.feed(body), *decoder.close()]:
            yield message.data


def replay(args: argparse.Namespace) -> int:
    """`agui replay FILE [--summary]`; FILE `-` is standard input."""
    from agui.stream.conversation import Conversation

    name = "standard input" if args.file == "-" else args.file
    try:
        if args.file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.file, "rb") as fh:
                data = fh.read()
    except OSError as exc:
        print(f"agui replay: cannot read {name}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    conversation = Conversation(keep_events=True, keep_partial=True)
    try:
        conversation.consume(_recorded(data))
    except Exception:  # recorded in conversation.failures; the summary reports it
        pass
    try:
        return _report(conversation, args.summary)
    except BrokenPipeError:
        _quiet_stdout()
        return 0
