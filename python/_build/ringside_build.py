"""A PEP 517 build backend for the ringside package, in the standard library alone, so that
pip builds it offline with build isolation on (pyproject.toml's requires is empty): a wheel
(py3-none-any: the package's .py files and its dist-info), an sdist (what builds that wheel
again), and an editable wheel (PEP 660: a .pth naming this directory). The version is
ringside/__init__.py's __version__."""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

NAME = "ringside"
SUMMARY = "ringside's bridge: a PyTorch job streams into the ringside dashboard"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed times: the same sources give the same archive


def _version():
    with open(os.path.join(ROOT, NAME, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', f.read(), re.M)
    if not m:
        raise RuntimeError("no __version__ in %s/__init__.py" % NAME)
    return m.group(1)


def _metadata(version):
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nLicense: MIT\n"
            "Requires-Python: >=3.9\n" % (NAME, version, SUMMARY)).encode()


def _wheel_file():
    return ("Wheel-Version: 1.0\nGenerator: ringside_build\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n").encode()


def _sources():
    """(path in the package tree, path on disk) of each .py file of the package."""
    out = []
    for d, dirs, files in os.walk(os.path.join(ROOT, NAME)):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                full = os.path.join(d, f)
                out.append((os.path.relpath(full, ROOT).replace(os.sep, "/"), full))
    return out


def _distinfo(version):
    return "%s-%s.dist-info" % (NAME, version)


def _write_wheel(directory, entries, version):
    """entries: (name in the wheel, bytes); the dist-info and its RECORD added."""
    di = _distinfo(version)
    entries = list(entries) + [(di + "/METADATA", _metadata(version)),
                               (di + "/WHEEL", _wheel_file()),
                               (di + "/top_level.txt", (NAME + "\n").encode())]
    record = []
    for name, data in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record.append("%s,sha256=%s,%d" % (name, digest.decode(), len(data)))
    record.append(di + "/RECORD,,")
    entries.append((di + "/RECORD", ("\n".join(record) + "\n").encode()))
    wheel = "%s-%s-py3-none-any.whl" % (NAME, version)
    with zipfile.ZipFile(os.path.join(directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, _EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    version = _version()
    di = os.path.join(metadata_directory, _distinfo(version))
    os.makedirs(di, exist_ok=True)
    for name, data in (("METADATA", _metadata(version)), ("WHEEL", _wheel_file())):
        with open(os.path.join(di, name), "wb") as f:
            f.write(data)
    return _distinfo(version)


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    return _write_wheel(wheel_directory, [(rel, _read(full)) for rel, full in _sources()],
                        version)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    return _write_wheel(wheel_directory, [(NAME + ".pth", (ROOT + "\n").encode())], version)


def build_sdist(sdist_directory, config_settings=None):
    version = _version()
    base = "%s-%s" % (NAME, version)
    files = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
             ("_build/ringside_build.py", os.path.abspath(__file__))] + _sources()
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        def add(rel, data):
            info = tarfile.TarInfo("%s/%s" % (base, rel))
            info.size, info.mode, info.mtime = len(data), 0o644, 315532800  # 1980-01-01
            t.addfile(info, io.BytesIO(data))
        add("PKG-INFO", _metadata(version))
        for rel, full in files:
            add(rel, _read(full))
    return name
