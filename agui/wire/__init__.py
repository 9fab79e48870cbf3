"""The wire layer: AG-UI documents as bytes and back, with no I/O.

* `codec`: `decode` and `encode` between JSON and the generated models (strict or tolerant), plus
  the cattrs converter and the codec tables.
* `sse`: the Server-Sent Events frame encoder (`sse_frame`) and incremental decoder (`SSEDecoder`).
* `proto`: the binary transport (length-prefixed protobuf frames), with no protobuf runtime needed.
* `pydantic`: conversion to and from the generated pydantic binding (`agui_pydantic`).
"""
