"""Which modules of an installed package name something in their source: a layer over a library's internals
checks that it covers every module that would need it, so an upgrade that adds one is not left unseen."""

import pathlib
from types import ModuleType


def modules_naming(package: ModuleType, name: str) -> set[str]:
    """The dotted names of `package`'s modules whose source holds `name`."""
    root = pathlib.Path(package.__file__ or "").parent
    return {
        ".".join(path.relative_to(root.parent).with_suffix("").parts)
        for path in root.rglob("*.py")
        if name in path.read_text()
    }
