"""Reading a wheel: the Python sources of a vLLM release, by module name."""

from __future__ import annotations

import ast
import threading
import zipfile
from collections.abc import Callable, Mapping


class SourceTree:
    """Read-only view of the ``vllm`` package sources (a wheel, or a mapping in tests)."""

    def __init__(self, reader: Callable[[str], str | None]) -> None:
        self._reader = reader
        self._text: dict[str, str | None] = {}
        self._ast: dict[str, ast.Module | None] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_mapping(cls, files: Mapping[str, str]) -> SourceTree:
        return cls(lambda path: files.get(path))

    @classmethod
    def from_zip(cls, zf: zipfile.ZipFile) -> SourceTree:
        names = set(zf.namelist())

        def read(path: str) -> str | None:
            if path not in names:
                return None
            return zf.read(path).decode("utf-8")

        return cls(read)

    def read(self, path: str) -> str | None:
        with self._lock:
            if path not in self._text:
                self._text[path] = self._reader(path)
            return self._text[path]

    def module_path(self, module: str) -> str | None:
        base = module.replace(".", "/")
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if self.read(candidate) is not None:
                return candidate
        return None

    def is_module(self, module: str) -> bool:
        return module.startswith("vllm") and self.module_path(module) is not None

    def is_package(self, module: str) -> bool:
        path = self.module_path(module)
        return path is not None and path.endswith("/__init__.py")

    def module_ast(self, module: str) -> ast.Module | None:
        if module in self._ast:
            return self._ast[module]
        path = self.module_path(module)
        tree = None
        if path is not None:
            text = self.read(path)
            assert text is not None
            tree = ast.parse(text, filename=path)
        self._ast[module] = tree
        return tree
