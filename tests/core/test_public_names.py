"""The top-level names: all in ``__all__`` and ``dir(attnsignal)``, the lazy ones resolvable
on first use and imported for type checkers too."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import attnsignal


def test_every_public_name_is_listed_and_resolves():
    names = set(attnsignal.__all__)
    assert set(attnsignal._LAZY) <= names
    assert names <= set(dir(attnsignal))
    for name in attnsignal.__all__:
        assert getattr(attnsignal, name) is not None, name


def test_the_lazy_names_are_imported_for_type_checkers():
    tree = ast.parse(Path(attnsignal.__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If)
                 and ast.unparse(n.test) == "TYPE_CHECKING")
    imported = {a.name for stmt in block.body for a in stmt.names}
    assert imported == set(attnsignal._LAZY)


def test_the_scientific_layers_load_on_first_use():
    code = ("import sys, attnsignal; "
            "assert 'attnsignal.theory' not in sys.modules and 'scipy' not in sys.modules; "
            "attnsignal.landscape; assert 'attnsignal.theory' in sys.modules")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
