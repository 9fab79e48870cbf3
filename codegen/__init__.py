"""The generator: spec/agui.yaml -> intermediate model -> Jinja templates -> generated/.

Stages, one module each: `load` (the only reader of spec/), `model` (the intermediate model and its
checks), `render` (templates and formatting), `__main__` (write or check the files). `runtime/`
holds the generated package's hand-written support, which render copies into the tree as it is.
"""
