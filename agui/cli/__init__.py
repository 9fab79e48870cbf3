"""The `agui` command line (`main`), one module per command: `validate`, `serve`, `run`
(run and replay), `connect` (connect and stop), `threads`, `capabilities`, `demo` (the demo agent
and the demo command).
The usage:

    agui validate [--as DEFINITION] [--strict] [FILE ...]
        Validate JSON documents against a definition of the spec (default: Event) and print one JSON
        line per document: {"file", "line", "ok", "errors", "warnings", "wire"}. Without FILE (or
        with -), read standard input. What each holds is recognised by content: JSON Lines (a FILE
        ending in .jsonl always), a JSON array, an SSE capture, or one document. Exit 1 if any
        failed.
    agui serve [MODULE:ATTR] [--host 127.0.0.1] [--port 8000] [--path /agent] [--app-dir DIR]
               [--workers N] [--log-level LEVEL] [--root-path PATH]
               [--timeout-graceful-shutdown SECONDS] [--store URL] [--cors-origin ORIGIN ...]
               [--model-url URL --model NAME]
        Serve an agent (wrapped in AgentApp at --path; default: the built-in demo agent) or an
        ASGI app (as it is) under uvicorn, MODULE found from the working directory or --app-dir;
        with --model, an OpenAI-compatible model with the demo tools (key from
        AGUI_MODEL_API_KEY / OPENAI_API_KEY). On SIGTERM or Ctrl-C, runs still going near the end
        of the graceful window end in RUN_ERROR SERVER_SHUTDOWN. --cors-origin lets web pages of
        that origin call the agent from a browser ('*': any, for development).
    agui run URL [--message TEXT] [--input FILE] [--resume FILE] [--header 'NAME: VALUE' ...]
             [--binary] [--thread-file PATH] [--json] [--summary]
        Post a run and print the assistant's text as it streams, or every event as a JSON line; with
        --summary, process the stream like a client and print one summary JSON object at the end.
        --resume FILE answers the interrupts of the thread's last run, whose thread was saved in
        $XDG_STATE_HOME/agui/threads (~/.local/state/agui/threads) or at --thread-file.
    agui run URL --rejoin RUN_ID [--after CURSOR] [--json] [--summary]
        Post nothing: read again the stream of a run a server with a store keeps, as `agui run`
        shows a run; with --after, show only what follows that event id.
    agui connect URL THREAD [--full] [--json] [--summary]
        Show a thread a server with a store keeps: its history (compacted, or with --full every
        stored event), then its live run until it ends.
    agui stop URL RUN_ID
        Ask a server with a store to stop a run; it ends with the outcome cancelled.
    agui threads URL [--limit N] [--before CURSOR] [--json] [--header 'NAME: VALUE' ...]
        List the caller's threads of a server with a store, newest first (one line each, or the
        server's answer as JSON); the next page's command goes to stderr.
    agui threads URL --delete THREAD
        Delete a thread from the server's store: every stored event of its runs (its live run is
        stopped first).
    agui capabilities URL [--strict] [--compact]
        Print what the agent declares it can do (GET URL/capabilities) as JSON.
    agui replay FILE [--summary]
        Process a recorded stream (JSON Lines, one event per line, a JSON array or an SSE capture;
        FILE - is standard input) without a server;
        print every delivered event as a JSON line, or with --summary one summary JSON object.
        The summary's outcome is completed, interrupt, error (the agent sent RUN_ERROR) or failed
        (the client rejected the stream); run and replay exit 0 for completed and interrupt, 1 for
        error and failed, 2 when the input cannot be read.
    agui demo
        Start the demo agent on a free loopback port, run a conversation against it, print it.
"""
