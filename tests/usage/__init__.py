"""The package used the way its users use it: the README's and the docs' examples written to a
temporary folder, served by the installed `agui` and `uvicorn` commands, and called over real
HTTP on 127.0.0.1 by this package's client, the `agui` command and the official TypeScript
client (the latter only under AGUI_INTEROP=1, as `nox -s interop` sets)."""
