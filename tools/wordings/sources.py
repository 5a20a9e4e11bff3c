"""vLLM releases on PyPI: list them, fetch one archive, and read its vllm/**/*.py without unpacking."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# Wheels were built for one CPython each until abi3; one of these versions matches every release.
PYTHONS = ("3.10", "3.8", "3.11", "3.12")
# pip matches --platform tags exactly (it only expands the legacy manylinux aliases), so name them all.
PLATFORMS = (
    "manylinux1_x86_64",
    "manylinux2014_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_28_x86_64",
    "manylinux_2_31_x86_64",
    "manylinux_2_35_x86_64",
)
SIMPLE_INDEX = "https://pypi.org/simple/vllm/"


def version_key(version: str) -> tuple:
    """Orders 0.9.0 < 0.9.0.1 < 0.10.0 and 0.8.5 < 0.8.5.post1 without packaging."""
    release, _, post = version.partition(".post")
    return (*tuple(int(part) for part in release.split(".")), int(post or -1))


def releases(first: str = "0.1.0", last: str = "0.33.0") -> list[str]:
    """Versions that `pip index versions vllm` lists, from first to last, oldest first."""
    out = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", "vllm"], capture_output=True, text=True, check=True
    ).stdout
    listed = re.search(r"Available versions: (.+)", out).group(1).split(", ")
    low, high = version_key(first), version_key(last)
    return sorted((v for v in listed if low <= version_key(v) <= high), key=version_key)


def download(version: str, folder: Path) -> Path:
    """The release's x86_64 wheel through pip, or its sdist where no wheel was published.

    pip cannot download an sdist without running its setup.py to read the metadata, and vLLM's code
    is never run here; so an sdist-only release is fetched from the index's file list (PEP 691).
    """
    platforms = [arg for tag in PLATFORMS for arg in ("--platform", tag)]
    for python in PYTHONS:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--only-binary",
                ":all:",
                *platforms,
                "--python-version",
                python,
                f"vllm=={version}",
                "-d",
                str(folder),
            ],
            capture_output=True,
            text=True,
        )
        wheels = list(folder.glob(f"vllm-{version}-*.whl"))
        if done.returncode == 0 and wheels:
            return wheels[0]
    return _download_sdist(version, folder)


def _download_sdist(version: str, folder: Path) -> Path:
    request = urllib.request.Request(SIMPLE_INDEX, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=180) as response:
        files = json.load(response)["files"]
    names = [f for f in files if f["filename"] in (f"vllm-{version}.tar.gz", f"vllm-{version}.zip")]
    if not names:
        raise LookupError(f"vllm {version}: no wheel for x86_64 and no sdist on the index")
    target = folder / names[0]["filename"]
    with urllib.request.urlopen(names[0]["url"], timeout=180) as response, target.open("wb") as out:
        while chunk := response.read(1 << 20):
            out.write(chunk)
    return target


def python_sources(archive: Path) -> Iterator[tuple[str, bytes]]:
    """(path inside the package, bytes) of each vllm/**/*.py in a wheel (zip) or an sdist (tar)."""
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as wheel:
            for name in wheel.namelist():
                if (path := _package_path(name, archive.suffix == ".zip")) is not None:
                    yield path, wheel.read(name)
        return
    with tarfile.open(archive) as sdist:
        for member in sdist:
            path = _package_path(member.name, True)
            if member.isfile() and path is not None:
                yield path, sdist.extractfile(member).read()


def _package_path(name: str, in_sdist: bool) -> str | None:
    """vllm/... for a .py file of the package; an sdist nests it under vllm-X.Y.Z/."""
    if in_sdist:
        name = name.split("/", 1)[1] if "/" in name else ""
    return name if name.startswith("vllm/") and name.endswith(".py") else None


def fetched(version: str) -> Iterator[tuple[str, bytes]]:
    """The release's sources, its archive deleted as soon as they have been read."""
    with tempfile.TemporaryDirectory(prefix=f"vllm-{version}-") as folder:
        archive = download(version, Path(folder))
        yield from python_sources(archive)


def harvest(versions: list[str], read: Callable[[str], list | dict], cache: Path, parallel: int = 2) -> dict[str, str]:
    """read() every release not in the cache yet, keeping each result as cache/VERSION.json;
    {version: why it failed} for those that failed. Two downloads at a time by default: the wheels
    are large and the machine is shared."""
    cache.mkdir(parents=True, exist_ok=True)
    missing = [v for v in versions if not (cache / f"{v}.json").exists()]

    def one(version: str) -> tuple[str, str | None]:
        try:
            found = read(version)
        except Exception as error:  # a release that cannot be had must not stop the others
            return version, f"{type(error).__name__}: {error}"
        (cache / f"{version}.json").write_text(json.dumps(found))
        print(f"read vllm {version}: {len(found)} entries", file=sys.stderr, flush=True)
        return version, None

    with ThreadPoolExecutor(parallel) as pool:
        results = list(pool.map(one, missing))
    return {version: why for version, why in results if why}
