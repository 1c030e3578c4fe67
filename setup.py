"""The one build step pyproject.toml cannot declare: the C record walker.

``reference_impl/protocol/_record_walk.c`` is the produce path's one-pass record
walk (see ``record_walk.py``). It is optional: where no compiler is found the
build goes on without it and the broker uses the pure-Python walker, which is the
reference the C one is tested against. ``pip install -e .`` (and tox) build it in
place; ``python setup.py build_ext --inplace`` rebuilds it after an edit.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "reference_impl.protocol._record_walk",
            ["reference_impl/protocol/_record_walk.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra"],
            optional=True,
        )
    ]
)
