"""One large SSE frame: decoding it costs time in proportion to its size, not to its square.

Usage: ``python benchmarks/sse_large.py [--rounds N] [--quick]`` (or ``nox -s bench``).

An AG-UI event can be large (a MESSAGES_SNAPSHOT of a long thread, a STATE_SNAPSHOT, a tool result
holding a document): one `data:` line of megabytes, which arrives in many network chunks. The
decoder (agui.wire.sse.SSEDecoder) keeps the pieces of a line that spans chunks and joins them
once, when the line ends; it used to copy the unfinished line again with every chunk, so an
8 MiB frame took 4.2 s where reading its bytes took 0.49 s.

Two measurements:

* over loopback: a server subprocess (uvicorn on 127.0.0.1) answers with one 8 MiB frame sent in
  64 KiB body chunks; the client reads the answer's bytes with httpx (``aiter_raw``: "reading its
  bytes"), reads them and feeds each chunk to an SSEDecoder ("decoding it"), and reads it
  through ``HttpAgent.frames`` (what a Conversation reads). The ratio decoding / reading must be
  at most 2 (TARGET);
* in this process, no network: frames of 1 to 16 MiB fed to the decoder in 64 KiB chunks, in
  seconds and MB/s: linear decoding keeps the rate flat as the frame doubles.

Each figure is the median of the rounds. Results also go to ``.bench/sse_large.json``. The
exit status is 0 whether the target is met or not (as the other benchmarks: a busy machine says
nothing about a regression); the table says PASS or FAIL.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from typing import Any

from common import RESULTS_DIR, serve_on_loopback, spawn_server, write_results

MIB = 1024 * 1024
CHUNK = 64 * 1024
FRAME_MIB = 8
TARGET = 2.0
"""Decoding the frame takes at most this many times as long as reading its bytes."""
RESULTS = RESULTS_DIR / "sse_large.json"


def frame(size: int) -> bytes:
    """One SSE frame of `size` bytes or a little more: a TEXT_MESSAGE_CONTENT whose delta is
    `size` ASCII letters."""
    head = b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"'
    return head + b"a" * size + b'"}\n\n'


def chunks(data: bytes, size: int = CHUNK) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


# ── the server subprocess ─────────────────────────────────────────────────────────────────────


def serve(size: int) -> None:
    """Bind a free loopback port, print it, answer every request with the frame (SSE, in 64 KiB
    body chunks) until SIGINT/SIGTERM."""

    body = chunks(frame(size))

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for piece in body:
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    serve_on_loopback(app, lifespan="off")


def start_server(size: int) -> tuple[subprocess.Popen[str], str]:
    proc, port = spawn_server([sys.executable, __file__, "--serve", str(size)], "the SSE server")
    return proc, f"http://127.0.0.1:{port}/agent"


# ── the client ────────────────────────────────────────────────────────────────────────────────


async def loopback(url: str, size: int, rounds: int) -> dict[str, list[float]]:
    import httpx

    import agui
    from agui.wire.sse import SSEDecoder

    run_input = agui.RunAgentInput(thread_id="t", run_id="r", messages=())
    body = agui.encode(run_input)
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    times: dict[str, list[float]] = {"read": [], "decode": [], "HttpAgent.frames": []}
    async with httpx.AsyncClient(timeout=60) as client:
        deadline = time.monotonic() + 20
        while True:  # wait until the server answers
            try:
                await client.post(url, content=body, headers=headers)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise SystemExit("benchmarks: the SSE server is not answering") from None
                await asyncio.sleep(0.05)

        async def read() -> None:
            total = 0
            async with client.stream("POST", url, content=body, headers=headers) as response:
                async for piece in response.aiter_raw():
                    total += len(piece)
            assert total >= size

        async def decode() -> None:
            decoder = SSEDecoder(max_frame_bytes=size + MIB)
            messages = []
            async with client.stream("POST", url, content=body, headers=headers) as response:
                async for piece in response.aiter_raw():
                    messages += decoder.feed(piece)
            messages += decoder.close()
            assert len(messages) == 1 and len(messages[0].data) >= size

        agent = agui.HttpAgent(url, client=client, max_frame_bytes=size + MIB, resume=None)

        async def frames() -> None:
            got = [data async for data in agent.frames(run_input)]
            assert len(got) == 1

        cases = {"read": read, "decode": decode, "HttpAgent.frames": frames}
        for number in range(rounds):
            order = list(cases) if number % 2 == 0 else list(reversed(cases))
            for name in order:
                start = time.perf_counter()
                await cases[name]()
                times[name].append(time.perf_counter() - start)
    return times


def in_process(sizes_mib: list[int], rounds: int) -> list[dict[str, Any]]:
    from agui.wire.sse import SSEDecoder

    rows = []
    for mib in sizes_mib:
        pieces = chunks(frame(mib * MIB))
        seconds = []
        for _ in range(rounds):
            decoder = SSEDecoder(max_frame_bytes=(mib + 1) * MIB)
            start = time.perf_counter()
            messages = [m for piece in pieces for m in decoder.feed(piece)]
            messages += decoder.close()
            seconds.append(time.perf_counter() - start)
            assert len(messages) == 1
        median = statistics.median(seconds)
        rows.append({"mib": mib, "seconds": median, "mb_per_s": mib * MIB / median / 1e6})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", type=int, metavar="BYTES", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return 0
    rounds = 3 if args.quick else args.rounds
    size = FRAME_MIB * MIB
    proc, url = start_server(size)
    try:
        times = asyncio.run(loopback(url, size, rounds))
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    local = in_process([1, 2, 4, 8, 16], rounds)
    read = statistics.median(times["read"])
    decode = statistics.median(times["decode"])
    frames = statistics.median(times["HttpAgent.frames"])
    ratio = decode / read
    met = ratio <= TARGET
    print(
        f"\none {FRAME_MIB} MiB SSE frame in {CHUNK // 1024} KiB chunks over loopback "
        f"(median of {rounds} rounds)\n"
    )
    print(f"  read its bytes (httpx aiter_raw)       {read:8.3f} s")
    print(f"  read and decode (SSEDecoder.feed)      {decode:8.3f} s")
    print(f"  HttpAgent.frames                       {frames:8.3f} s")
    verdict = "PASS" if met else "FAIL"
    print(f"  decode / read: {ratio:.2f}x (target <= {TARGET:g}x: {verdict})")
    print(f"\nin this process, {CHUNK // 1024} KiB chunks, the decoder alone\n")
    for row in local:
        print(f"  {row['mib']:>3} MiB  {row['seconds']:8.4f} s  {row['mb_per_s']:8.0f} MB/s")
    saved = write_results(
        RESULTS,
        {
            "frame_mib": FRAME_MIB,
            "chunk_bytes": CHUNK,
            "rounds": rounds,
            "loopback_seconds": times,
            "read_s": read,
            "decode_s": decode,
            "http_agent_frames_s": frames,
            "ratio": ratio,
            "target": TARGET,
            "met": met,
            "in_process": local,
        },
    )
    print(f"\nresults: {saved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
