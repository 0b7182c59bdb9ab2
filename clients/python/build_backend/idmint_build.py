"""A PEP 517 build backend for this one package, standard library only.

It writes a pure-Python wheel of ``src/idmint_client`` (and an sdist of this
directory's sources), with the name and version of ``pyproject.toml``'s
``[project]``; enough for ``pip install clients/python`` without network.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "idmint_client"


def _project() -> Dict[str, str]:
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as file:
        text = file.read()
    table = text.split("[project]", 1)[1].split("\n[", 1)[0]
    fields = dict(re.findall(r'^([a-z-]+)\s*=\s*"([^"]*)"', table, re.MULTILINE))
    for field in ("name", "version"):
        if field not in fields:
            raise RuntimeError(f"pyproject.toml's [project] has no {field}")
    return fields


def _dist(fields: Dict[str, str]) -> str:
    return f"{re.sub(r'[-_.]+', '_', fields['name'])}-{fields['version']}"


def _metadata(fields: Dict[str, str]) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {fields['name']}", f"Version: {fields['version']}"]
    if "description" in fields:
        lines.append(f"Summary: {fields['description']}")
    if "requires-python" in fields:
        lines.append(f"Requires-Python: {fields['requires-python']}")
    return "\n".join(lines) + "\n"


def _sources() -> List[Tuple[str, str]]:
    """(path in the wheel, path on disk) of the package's files."""
    base = os.path.join(ROOT, "src")
    files = []
    for directory, subdirectories, names in os.walk(os.path.join(base, PACKAGE)):
        subdirectories[:] = sorted(name for name in subdirectories if name != "__pycache__")
        for name in sorted(names):
            if name.endswith((".py", ".typed")):
                path = os.path.join(directory, name)
                files.append((os.path.relpath(path, base).replace(os.sep, "/"), path))
    return files


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def build_wheel(
    wheel_directory: str,
    config_settings: Optional[Dict[str, Any]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    fields = _project()
    dist = _dist(fields)
    info = f"{dist}.dist-info"
    filename = f"{dist}-py3-none-any.whl"
    entries = [(name, open(path, "rb").read()) for name, path in _sources()]
    entries.append((f"{info}/METADATA", _metadata(fields).encode()))
    entries.append(
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: idmint_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    )
    record = [_record_line(name, data) for name, data in entries] + [f"{info}/RECORD,,"]
    entries.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in entries:
            wheel.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return filename


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    fields = _project()
    dist = _dist(fields)
    filename = f"{dist}.tar.gz"
    paths = ["pyproject.toml", "README.md", "build_backend/idmint_build.py"]
    paths += ["src/" + name for name, _ in _sources()]
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as sdist:
        for path in paths:
            sdist.add(os.path.join(ROOT, path), arcname=f"{dist}/{path}")
        info = tarfile.TarInfo(f"{dist}/PKG-INFO")
        data = _metadata(fields).encode()
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return filename
