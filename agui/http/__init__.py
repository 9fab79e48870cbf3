"""The HTTP layer: the ASGI server `AgentApp` (`server`), which serves one agent at one path as
Server-Sent Events or protobuf frames and gives every run a correct lifecycle (with a store, the
durable runs of `durable`), and the httpx client `HttpAgent` (`client`), a remote agent that is
itself an Agent. Both are re-exported as `agui.AgentApp` and `agui.HttpAgent`; nothing here is
imported until used."""
