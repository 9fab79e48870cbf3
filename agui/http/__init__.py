"""The HTTP layer: the ASGI server `AgentApp` (`server`), which serves one agent at one path as
Server-Sent Events or protobuf frames and gives every run a correct lifecycle (with a store, the
durable runs of `durable`), `AgentServer` (`agents`), several of them at `/NAME` with the health
checks of `health`, and the httpx client `HttpAgent` (`client`), a remote agent that is itself an
Agent. They are re-exported as `agui.AgentApp`, `agui.AgentServer` and `agui.HttpAgent`; nothing
here is imported until used. The servers' shared parts (`asgi`, `cors`, `response`, `lifetime`)
are internal to the package."""
