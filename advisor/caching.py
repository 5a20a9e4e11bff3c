"""What the advisor keeps between runs in $XDG_CACHE_HOME/vllm-advisor (by default ~/.cache/vllm-advisor):
what is slow to make and depends only on the package's own files (parser tables, validated rules)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any, TypeVar, cast

T = TypeVar("T")


def _cache_file(kind: str, parts: Iterable[bytes], suffix: str) -> str | None:
    """The file for what is made from these parts (named by their digest, so versions never share one),
    or None where the folder cannot be made: a read-only home, a sandbox, where it is made every time."""
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(home) / "vllm-advisor"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())  # each part's own digest: no two lists of parts collide
    return str(folder / f"{kind}-{digest.hexdigest()[:16]}.{suffix}")


def _save(path: str, write: Callable[[IO[bytes]], Any]) -> None:
    """Write the file aside and rename it into place: advisors started together (pre-commit runs several)
    never read one that another is still writing. A full or read-only cache keeps nothing."""
    part = f"{path}.{os.getpid()}.part"
    try:
        with open(part, "wb") as out:
            write(out)
        os.replace(part, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(part)


def kept(
    kind: str,
    parts: Iterable[bytes],
    make: Callable[[], T],
    load: Callable[[IO[bytes]], Any] = pickle.load,
    dump: Callable[[T, IO[bytes]], Any] = pickle.dump,
    suffix: str = "pickle",
) -> T:
    """What make() makes of these parts (rule files validated, a grammar's parser tables): made once, then
    kept in a file named by the parts' digest, so a change to any of them makes it again."""
    path = _cache_file(kind, parts, suffix)
    if path is not None:
        try:
            with open(path, "rb") as saved:
                return cast(T, load(saved))  # the advisor's own file, written below
        except Exception:  # missing, cut short, or not one: made again below and kept anew
            pass
    made = make()
    if path is not None:
        _save(path, lambda out: dump(made, out))
    return made


def file_parts(files: list[Path]) -> list[bytes]:
    """The files' names and bytes: what a thing made of them is kept under."""
    return [*(path.name.encode() for path in files), *(path.read_bytes() for path in files)]
