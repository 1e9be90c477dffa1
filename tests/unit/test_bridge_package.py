"""The Python bridge as a package, offline: ringside.__version__ is the program's version
(`ringside --version`); `pip install --no-index --target DIR ./python` (Debian's pip, build
isolation on: the in-tree backend needs nothing from an index) gives a package that imports
from DIR with that version and dist-info; `pip install --no-index ./python` into a virtual
environment does the same; the backend's sdist installs as the tree does. Skipped (77) where
this Python has no pip.

usage: test_bridge_package.py RINGSIDE PYTHON_DIR SCRATCH_DIR
"""
import os
import re
import shutil
import subprocess
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=120, **kw)
    if p.returncode != 0:
        fail("%s: exit %d\n%s" % (" ".join(cmd), p.returncode, p.stdout))
    return p.stdout


def imported(python, path_dir, env):
    """(version, file) of ringside as `python` imports it, from path_dir when given."""
    code = ("import sys\n%simport ringside\nprint(ringside.__version__)\nprint(ringside.__file__)"
            % ("sys.path.insert(0, %r)\n" % path_dir if path_dir else ""))
    out = run([python, "-c", code], cwd="/", env=env).split("\n")
    return out[0], out[1]


def main():
    if len(sys.argv) != 4:
        fail("usage: test_bridge_package.py RINGSIDE PYTHON_DIR SCRATCH_DIR")
    ringside_bin, pydir, scratch = (os.path.abspath(a) for a in sys.argv[1:])
    py = sys.executable
    if subprocess.run([py, "-m", "pip", "--version"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        print("skip: %s has no pip (Debian: python3-pip)" % py)
        sys.exit(77)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
               PIP_CACHE_DIR=os.path.join(scratch, "cache"), PYTHONDONTWRITEBYTECODE="1")
    for k in ("PYTHONPATH", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"):
        env.pop(k, None)

    m = re.match(r"ringside (\S+) \(", run([ringside_bin, "--version"]))
    if not m:
        fail("ringside --version says no version")
    program = m.group(1)
    version, _ = imported(py, pydir, env)
    if version != program:
        fail("ringside.__version__ %s is not the program's %s" % (version, program))

    target = os.path.join(scratch, "target")
    run([py, "-m", "pip", "install", "--no-index", "--target", target, pydir], env=env)
    version, where = imported(py, target, env)
    if version != program or not where.startswith(target + os.sep):
        fail("from --target: version %s from %s" % (version, where))
    dist = os.path.join(target, "ringside-%s.dist-info" % program, "METADATA")
    if not os.path.exists(dist) or "Version: %s\n" % program not in open(dist).read():
        fail("no dist-info of version %s in %s: %s" % (program, target, os.listdir(target)))

    venv = os.path.join(scratch, "venv")  # pip's own from the system site (no ensurepip)
    run([py, "-m", "venv", "--without-pip", "--system-site-packages", venv], env=env)
    vpy = os.path.join(venv, "bin", "python")
    run([vpy, "-m", "pip", "install", "--no-index", pydir], env=env)
    version, where = imported(vpy, None, env)
    if version != program or not where.startswith(venv + os.sep):
        fail("in a venv: version %s from %s" % (version, where))

    sys.path.insert(0, os.path.join(pydir, "_build"))
    import ringside_build
    sdist = os.path.join(scratch, "sdist")
    os.makedirs(sdist)
    name = ringside_build.build_sdist(sdist)
    if name != "ringside-%s.tar.gz" % program:
        fail("sdist %s" % name)
    target2 = os.path.join(scratch, "from-sdist")
    run([py, "-m", "pip", "install", "--no-index", "--target", target2,
         os.path.join(sdist, name)], env=env)
    version, where = imported(py, target2, env)
    if version != program or not where.startswith(target2 + os.sep):
        fail("from the sdist: version %s from %s" % (version, where))
    print("ok: ringside %s" % program)


main()
