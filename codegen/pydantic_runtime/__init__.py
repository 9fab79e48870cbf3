"""The pydantic binding's hand-written support, as the module it is: `python -m codegen` copies
`_base.py` into agui_pydantic/ as it is (a banner above it), so ruff and mypy check it here, where
it is written, and the generated tree holds no other copy to edit.

`_base.py` imports the generated `_spec` (what depends on the spec: the members each model pins,
the spec's defaults); `_spec.pyi` here states its shape for mypy and is not copied, since the
generated package has the module itself. Nothing imports this package: render.py reads its files.
"""
