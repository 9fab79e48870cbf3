"""What an agent is, on either side of the wire.

* `protocol`: `Agent` (a RunAgentInput in, an async iterator of events out), and the optional
  faces an agent can show: `InputValidator` (refuse an input before the stream opens),
  `CapabilitySource` (declare what it can do, served at `GET {path}/capabilities`),
  `FrameSource` (hand over undecoded frames, as HttpAgent does) and `ThreadSource` /
  `SyncThreadSource` (hand over a stored thread's frames, as HttpAgent does against a server
  with a store).

What a run must look like is agui.stream.lifecycle's: the server and every client-side path that
runs a local agent go through it.
"""
