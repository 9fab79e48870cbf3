"""Client-side stream processing: what turns a stream of events into a conversation.

Order (the official TypeScript client's): tolerant decoding with strip-and-warn -> chunk expansion
(`chunks`) -> verification (`verify`) -> the reducer (`reducer`), joined by `pipeline`;
`conversation` keeps one thread across runs. `lifecycle` is the producing side's counterpart: the
wrapper that makes any agent's stream a correct run, used by the server and by
`Conversation.run` for a local agent. Each stage is a small class with
`feed(event) -> list` and `finish() -> list`, so any source can drive them (the HTTP client, a
list, a recorded file).

Warnings are data: every stage reports what it stripped, dropped or could not apply as a
StreamWarning (`warning`; collected, and logged on the "agui.stream" logger). A rule the client
enforces that the stream breaks raises agui.ProtocolError; a producer's RUN_ERROR is an event, not
an exception.
"""
