#!/usr/bin/env python3
"""What the option table makes, checked against what the program says: every command's
--help against its man page (the same options, the same words), the bash completion offering
every option of --help, train's options all keys of the config file and of --print-config
(and --print-config's output read back as a config file), `man` finding and rendering the
pages from the build tree without a warning.

usage: docs.py RINGSIDE DOC_DIR SCRATCH_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

RINGSIDE, DOC, SCRATCH = (os.path.abspath(p) for p in sys.argv[1:4])
failures = []


def fail(msg):
    failures.append(msg)
    print("docs: FAIL: " + msg)


def run(*args, env=None):
    p = subprocess.run([RINGSIDE, *args], capture_output=True, text=True, env=env, timeout=60)
    return p.returncode, p.stdout, p.stderr


OPTION = re.compile(r"^  ((?:-\w, )?--[a-z][\w-]*(?: \S+)?)(?:  +(.*))?$")


def help_options(text):
    """The options of a --help text: {left column: its words}."""
    opts, cur = {}, None
    for line in text.split("\n"):
        m = OPTION.match(line)
        if m:
            cur = m.group(1)
            opts[cur] = (m.group(2) or "").split()
        elif cur and re.match(r"^ {20,}\S", line):
            opts[cur] += line.split()
        else:
            cur = None
    return opts


def troff_text(s):
    s = s.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")
    return re.sub(r"\\f[BIRP]", "", s)


def man_options(path):
    """The options of a man page's OPTIONS section: {tag: its words}."""
    opts, cur, section = {}, None, None
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if line.startswith(".SH"):
            section = line[4:].strip('"')
            cur = None
        elif section != "OPTIONS":
            continue
        elif line == ".TP":
            cur = troff_text(lines[i + 1][3:]) if lines[i + 1].startswith(".B ") else None
            if cur:
                opts[cur] = []
        elif line.startswith("."):
            if not line.startswith(".B "):
                cur = None
        elif cur:
            opts[cur] += troff_text(line).split()
    return opts


rc, top, _ = run("--help")
commands = re.findall(r"^  ([a-z]+) +\S", top.split("Commands:")[1], re.M)
if len(commands) < 10:
    fail("the top-level --help lists %d commands" % len(commands))

completion = os.path.join(DOC, "completion", "ringside")


def completions(words):
    """What the bash completion offers after `ringside WORDS...` (the last word being typed)."""
    script = (
        'source "$1"; shift; COMP_WORDS=(ringside "$@"); COMP_CWORD=$#; _ringside; '
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    p = subprocess.run(["bash", "-c", script, "bash", completion, *words], capture_output=True,
                       text=True, timeout=30)
    if p.returncode != 0:
        fail("the completion script failed: " + p.stderr.strip())
    return set(p.stdout.split())


offered = completions([""])
for c in commands:
    if c not in offered:
        fail("the completion does not offer the command %s" % c)

for cmd in commands:
    rc, text, err = run(cmd, "--help")
    if rc != 0 or err:
        fail("%s --help: status %d, stderr %r" % (cmd, rc, err))
        continue
    helps = help_options(text)
    page = os.path.join(DOC, "man1", "ringside-%s.1" % cmd)
    if not os.path.exists(page):
        fail("no man page %s" % page)
        continue
    mans = man_options(page)
    for left in helps.keys() - mans.keys():
        fail("%s: %s is in --help, not in ringside-%s(1)" % (cmd, left, cmd))
    for left in mans.keys() - helps.keys():
        fail("%s: %s is in ringside-%s(1), not in --help" % (cmd, left, cmd))
    for left in helps.keys() & mans.keys():
        if helps[left] != mans[left]:
            fail("%s %s: --help says %r, the man page %r" % (cmd, left, " ".join(helps[left]),
                                                             " ".join(mans[left])))
    usage = text.split("\n")[0][len("usage: "):].split()
    with open(page, encoding="utf-8") as f:
        body = troff_text(f.read())
    if " ".join(usage) not in " ".join(body.split()):
        fail("%s: the usage line is not the man page's synopsis" % cmd)
    offered = completions([cmd, "--"])
    for left in helps:
        name = re.search(r"--[\w-]+", left).group(0)
        if name not in offered:
            fail("%s: the completion does not offer %s" % (cmd, name))
    if len(helps) < 2:
        fail("%s --help lists %d options" % (cmd, len(helps)))

# a value's completion: an option's words, and file names for FILE
if completions(["vpoc", "--profile", ""]) != {"close", "range"}:
    fail("vpoc --profile does not complete to close and range")
os.makedirs(SCRATCH, exist_ok=True)
open(os.path.join(SCRATCH, "bars.csv"), "w").close()
if os.path.join(SCRATCH, "bars.csv") not in completions(["train", "--data", SCRATCH + "/ba"]):
    fail("train --data does not complete a file name")

# train's options are the config file's keys: --print-config names every one, and its
# output is a config file train takes as it is
rc, text, _ = run("train", "--help")
keys = [re.search(r"--([\w-]+)", left).group(1) for left in help_options(text)]
keys = [k for k in keys if k not in ("config", "print-config", "help")]
rc, printed, err = run("train", "--headless", "--print-config")
config = json.loads(printed) if rc == 0 else {}
for k in keys:
    if k not in config:
        fail("train --%s is not in --print-config's output" % k)
path = os.path.join(SCRATCH, "config.json")
with open(path, "w", encoding="utf-8") as f:
    f.write(printed)
rc, again, err = run("train", "--config", path, "--print-config")
if rc != 0 or json.loads(again or "{}") != config:
    fail("--print-config's output read back as --config: status %d, %s" % (rc, err.strip()))

# man finds the pages in the build tree and renders them without a warning
if not shutil.which("man"):
    fail("man is not installed (man-db)")
else:
    env = dict(os.environ, MANPATH=DOC, MANWIDTH="80")
    p = subprocess.run(["man", "-w", "ringside"], capture_output=True, text=True, env=env)
    if p.stdout.strip() != os.path.join(DOC, "man1", "ringside.1"):
        fail("MANPATH=%s man -w ringside says %r" % (DOC, p.stdout.strip() or p.stderr))
    p = subprocess.run(["man", "ringside-train"], capture_output=True, text=True, env=env)
    if "--epochs N" not in p.stdout or "RINGSIDE-TRAIN(1)" not in p.stdout:
        fail("man ringside-train does not render its options")
    for page in sorted(os.listdir(os.path.join(DOC, "man1"))):
        p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z",
                            os.path.join(DOC, "man1", page)], capture_output=True, text=True)
        if p.returncode != 0 or p.stderr:
            fail("groff warns on %s: %s" % (page, p.stderr.strip()))

if failures:
    print("docs: %d failures" % len(failures))
    sys.exit(1)
print("docs: ok (%d commands: --help, man pages, completion and config agree)" % len(commands))
