"""ringside's Python bridge: a PyTorch training script streams its phases, metrics,
synchronize times, process-group calls and caching-allocator state into `ringside watch`, and
takes the dashboard's commands back.

    import ringside
    rs = ringside.connect()              # a no-op (one warning) when no ringside listens
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            with rs.phase("forward"):
                loss = loss_fn(model(x), y)
            with rs.phase("backward"):
                loss.backward()
            with rs.phase("optimizer"):
                opt.step(); opt.zero_grad()
            rs.step(epoch + 1, step, loss=loss.item())   # metrics; commands run here
    rs.close()

Pure Python (3.9+), nothing beyond PyTorch. The training thread only puts lines on a bounded
queue: a background thread writes them to the socket, so a slow, stopped or killed dashboard
never blocks or slows training (lines that do not fit are dropped and counted). The wire
format is the JSON lines of `ringside train --headless` (schema version 1), so a stream saved
with connect(record=FILE) plays back with `ringside replay FILE`.
"""
import atexit
import collections
import json
import os
import queue
import socket
import sys
import threading
import time
import warnings

__all__ = ["connect", "Bridge", "default_path", "SCHEMA_VERSION", "PHASES"]

SCHEMA_VERSION = 1
# The phases ringside colours as its own; any other name is shown as "other".
PHASES = ("load", "vpoc", "features", "h2d", "cleanup", "forward", "backward", "optimizer",
          "sync", "eval", "checkpoint", "paused", "allreduce", "comm-init", "teardown")
_QUEUE_LINES = 16384
_COMMANDS = ("pause", "resume", "chunk_step", "set_chunk", "cleanup", "probe", "stop")


def default_path():
    """$RINGSIDE_SOCKET, else $XDG_RUNTIME_DIR/ringside/bridge.sock, else
    /tmp/ringside-UID/bridge.sock: where `ringside watch` listens by default."""
    path = os.environ.get("RINGSIDE_SOCKET")
    if path:
        return path
    rt = os.environ.get("XDG_RUNTIME_DIR")
    if rt and rt.startswith("/"):
        return os.path.join(rt, "ringside", "bridge.sock")
    return "/tmp/ringside-%d/bridge.sock" % os.getuid()


def _now():
    return time.monotonic_ns()  # CLOCK_MONOTONIC: the dashboard's clock


def _torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


class _Phase:
    __slots__ = ("bridge", "name", "start")

    def __init__(self, bridge, name):
        self.bridge, self.name = bridge, name

    def __enter__(self):
        self.start = _now()
        return self

    def __exit__(self, *exc):
        self.bridge._phase_done(self.name, self.start, _now())
        return False


class Bridge:
    """A connection to `ringside watch` (or, when there is none, an object whose every call
    does nothing). Made by connect()."""

    def __init__(self, path=None, name=None, device=None, rank=None, control=True,
                 memory_every=20, record=None, on_command=None, _warn=True):
        path = path or default_path()
        for scheme in ("unix://", "unix:"):  # a URL names the same socket
            if path.startswith(scheme):
                path = path[len(scheme):]
                break
        self.path = path
        self.enabled = False
        self.dropped = 0          # lines the queue had no room for
        self.memory_every = memory_every
        self.control = bool(control)
        self._callback = on_command
        self._commands = queue.SimpleQueue()
        self._q = collections.deque()  # append and popleft are atomic: no lock on the hot path
        self._seq = 0
        self._epoch, self._step = 0, -1
        self._steps = 0
        self._loss = None
        self._phase_heads = {}
        self._reads = 0
        self._largest = 0
        self._paused = False
        self._closed = False
        self._record = open(record, "a", buffering=1) if record else None
        self._torch = _torch()
        self.device = self._device(device)
        self.rank = rank if rank is not None else self._dist_rank()
        self.name = name or os.path.basename(sys.argv[0] or "python")
        self._sock = None
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(2.0)
            s.connect(self.path)
            s.settimeout(None)
            self._sock = s
        except OSError as e:
            if self._record is None:
                if _warn:
                    warnings.warn("ringside: no dashboard at %s (%s): the bridge does nothing"
                                  % (self.path, e.strerror or e), stacklevel=3)
                return
        self.enabled = True
        self._emit(self._run_line())
        if self._sock is not None:
            threading.Thread(target=self._writer, name="ringside-writer", daemon=True).start()
            threading.Thread(target=self._reader, name="ringside-reader", daemon=True).start()
        self._mem = threading.Event()
        self._snapshot = threading.Event()
        threading.Thread(target=self._memory, name="ringside-memory", daemon=True).start()
        self._patch_empty_cache()
        atexit.register(self.close)

    # ---- what the script calls ----

    def phase(self, name):
        """A context manager timing one phase: `with rs.phase("forward"): ...`."""
        return _Phase(self, name)

    def step(self, epoch, step, loss=None, val_loss=None, samples_per_s=None):
        """The training position and metrics; also where commands from the dashboard run (in
        this, the training thread), and every memory_every steps the allocator is read."""
        self._epoch, self._step = int(epoch), int(step)
        if not self.enabled:
            return
        if loss is not None:
            self._loss = float(loss)
        if (loss is not None or val_loss is not None) and _ok(self._loss) and _ok(val_loss):
            val = ',"val_loss":%r' % float(val_loss) if val_loss is not None else ""
            self._line('{"type":"metric","seq":%d,"dev":%d,"t_ns":%d,"epoch":%d,"step":%d,'
                       '"loss":%r,"samples_per_s":%r%s}'
                       % (self._seq, self.device, _now(), self._epoch, self._step, self._loss,
                          float(samples_per_s or 0.0), val))
            self._seq += 1
        self._steps += 1
        if self.memory_every and self._steps % self.memory_every == 0:
            self._mem.set()
        self._run_commands()

    def synchronize(self, what=None):
        """torch.cuda.synchronize() (or what.synchronize() for a stream or an event), timed and
        announced, so a synchronize that never returns shows as a HANG."""
        op = "device"
        if what is not None:
            op = "event" if hasattr(what, "query") and hasattr(what, "elapsed_time") else "stream"
        start = self._call("torch.cuda.synchronize" if what is None else op + ".synchronize",
                           op, "sync")
        rc = 0
        try:
            if what is not None:
                what.synchronize()
            elif self._torch is not None and self._torch.cuda.is_available():
                self._torch.cuda.synchronize()
        except Exception:
            rc = -1
            raise
        finally:
            self._event({"type": "sync", "dev": self.device, "op": op, "start_ns": start,
                         "dur_ns": _now() - start, "rc": rc})
        return None

    def timed(self, call, fn, *args, op="device", phase="sync", **kwargs):
        """fn(*args, **kwargs), announced as `call` while it runs (a HANG names it) and timed."""
        start = self._call(call, op, phase)
        try:
            return fn(*args, **kwargs)
        finally:
            self._call_end(call, start)

    def snapshot(self):
        """Read the caching allocator's segments now (on the background thread)."""
        if self.enabled:
            self._snapshot.set()

    def on_command(self, callback):
        """callback(cmd, arg) runs in the training thread at the next step() for each command
        from the dashboard ("chunk_step" with +1/-1, "set_chunk", "cleanup", "probe", "pause",
        "resume", "stop"); it returns a text for the dashboard, or None. Without a callback,
        cleanup runs synchronize + empty_cache + synchronize, probe reads the allocator's
        segments, pause holds the training thread in step() until resume."""
        self._callback = callback

    def watch_distributed(self):
        """Announce and time torch.distributed's init_process_group, destroy_process_group,
        barrier and all_reduce, so a rank stuck in one shows as a HANG naming the rank and
        the call."""
        if self._torch is None or not self.enabled:
            return
        dist = self._torch.distributed
        specs = {"init_process_group": ("init", "comm-init"),
                 "destroy_process_group": ("destroy", "teardown"),
                 "barrier": ("barrier", "allreduce"), "all_reduce": ("allreduce", "allreduce")}
        for fname, (coll, phase) in specs.items():
            orig = getattr(dist, fname, None)
            if orig is None or getattr(orig, "_ringside", False):
                continue
            wrapper = self._wrap_collective(fname, orig, coll, phase)
            setattr(dist, fname, wrapper)

    def close(self):
        """Say the job ended and flush what is queued (at most a second)."""
        if self._closed or not self.enabled:
            return
        self._closed = True
        self._emit({"type": "summary", "state": "completed", "epochs": self._epoch,
                    "steps": max(self._step, 0)})
        if self._sock is not None:
            self._q.append(None)
        deadline = time.monotonic() + 1.0
        while self._q and time.monotonic() < deadline and self._sock is not None:
            time.sleep(0.01)
        if self._record:
            self._record.close()

    # ---- lines ----

    def _device(self, device):
        t = self._torch
        if device is not None:
            return int(getattr(device, "index", device) or 0)
        if t is not None and t.cuda.is_available():
            return t.cuda.current_device()
        return 0

    def _dist_rank(self):
        t = self._torch
        try:
            if t is not None and t.distributed.is_available() and t.distributed.is_initialized():
                return t.distributed.get_rank()
        except Exception:
            pass
        r = os.environ.get("RANK")
        return int(r) if r and r.isdigit() else None

    def _run_line(self):
        t = self._torch
        backend, dev_name, arch = "pytorch-cpu", "CPU", ""
        if t is not None and t.cuda.is_available():
            hip = getattr(t.version, "hip", None)
            backend = "pytorch-rocm" if hip else "pytorch-cuda"
            props = t.cuda.get_device_properties(self.device)
            dev_name = props.name
            arch = getattr(props, "gcnArchName", "") or "sm_%d%d" % (props.major, props.minor)
        line = {"type": "run", "version": SCHEMA_VERSION, "ringside": "bridge",
                "host": socket.gethostname(), "backend": backend, "device": dev_name,
                "arch": arch, "devices": 1, "device_list": [self.device], "start_ns": _now(),
                "start_wall_ns": time.time_ns(), "epochs": 0, "chunk": 0,
                "name": self.name, "pid": os.getpid(), "control": self.control,
                "config": {"script": sys.argv[0] if sys.argv else "", "torch":
                           getattr(t, "__version__", None)}}
        if self.rank is not None:
            line["rank"] = int(self.rank)
        return line

    def _event(self, line):
        line["seq"] = self._seq
        self._seq += 1
        self._emit(line)

    def _emit(self, obj):
        self._line(json.dumps(obj, separators=(",", ":"), allow_nan=False) if _finite(obj)
                   else json.dumps(_nonan(obj), separators=(",", ":")))

    def _line(self, text):
        if self._record:
            self._record.write(text + "\n")
        if self._sock is not None:
            if len(self._q) < _QUEUE_LINES:
                self._q.append(text)
            else:
                self.dropped += 1

    def _phase_done(self, name, start, end):
        """The hottest line (several a step): formatted directly, the name's JSON cached."""
        if not self.enabled:
            return
        head = self._phase_heads.get(name)
        if head is None:
            head = '{"type":"phase","phase":"%s","name":%s,"dev":%d,' % (
                name if name in PHASES else "other", json.dumps(name), self.device)
            self._phase_heads[name] = head
        self._line('%s"seq":%d,"start_ns":%d,"end_ns":%d,"epoch":%d,"step":%d,"chunk":-1}'
                   % (head, self._seq, start, end, self._epoch, self._step))
        self._seq += 1

    def _call(self, call, op, phase):
        start = _now()
        if self.enabled:
            self._emit({"type": "call", "dev": self.device, "call": call, "op": op,
                        "phase": phase, "start_ns": start,
                        "rank": -1 if self.rank is None else int(self.rank)})
        return start

    def _call_end(self, call, start):
        if self.enabled:
            self._emit({"type": "call", "dev": self.device, "call": call, "end": True,
                        "start_ns": start, "end_ns": _now()})

    def _wrap_collective(self, fname, orig, coll, phase):
        bridge = self

        def wrapper(*args, **kwargs):
            start = bridge._call("torch.distributed." + fname, "device", phase)
            rc = 0
            try:
                return orig(*args, **kwargs)
            except Exception:
                rc = -1
                raise
            finally:
                dur = _now() - start
                if fname == "init_process_group" and bridge.rank is None:
                    bridge.rank = bridge._dist_rank()
                bridge._event({"type": "collective", "dev": bridge.device, "t_ns": _now(),
                               "op": coll, "calls": 1, "bytes": 0, "start_ns": start,
                               "dur_ns": dur, "max_ns": dur, "epoch": bridge._epoch,
                               "step": bridge._step, "rc": rc})
        wrapper._ringside = True
        wrapper.__wrapped__ = orig
        return wrapper

    def _patch_empty_cache(self):
        t = self._torch
        if t is None or getattr(t.cuda.empty_cache, "_ringside", False):
            return
        orig, bridge = t.cuda.empty_cache, self

        def empty_cache():
            with bridge.phase("cleanup"):
                return orig()
        empty_cache._ringside = True
        empty_cache.__wrapped__ = orig
        t.cuda.empty_cache = empty_cache

    # ---- commands ----

    def _run_commands(self):
        while True:
            try:
                cmd, arg = self._commands.get_nowait()
            except queue.Empty:
                if not self._paused:
                    return
                time.sleep(0.05)  # paused: hold the training thread here
                continue
            rc, text = 0, None
            if arg is None:
                self._event({"type": "command", "t_ns": _now(), "cmd": cmd, "arg": 0, "rc": -1,
                             "result": "%s refused: its argument is not an integer" % cmd})
                continue
            try:
                if self._callback is not None:
                    text = self._callback(cmd, arg)
                if text is None:
                    text = self._builtin(cmd)
            except Exception as e:  # the dashboard hears of it; training goes on
                rc, text = -1, "%s failed: %s" % (cmd, e)
            self._event({"type": "command", "t_ns": _now(), "cmd": cmd, "arg": arg, "rc": rc,
                         "result": text or ("%s done" % cmd)})

    def _builtin(self, cmd):
        t = self._torch
        cuda = t is not None and t.cuda.is_available()
        if cmd == "cleanup":
            if cuda:
                self.synchronize()
                t.cuda.empty_cache()
                self.synchronize()
            self._mem.set()
            return "safe cleanup: synchronize, empty_cache, synchronize"
        if cmd == "probe":
            self._snapshot.set()
            return "allocator segments read"
        if cmd == "pause":
            self._paused = True
            return "paused at step %d" % self._step
        if cmd == "resume":
            self._paused = False
            return "resumed"
        return "%s: this script takes no such command" % cmd

    # ---- background threads ----

    def _writer(self):
        """Everything queued, in one write, every few milliseconds."""
        sock, q = self._sock, self._q
        done = False
        while not done:
            if not q:
                time.sleep(0.005)
                continue
            batch = []
            while q:
                text = q.popleft()
                if text is None:
                    done = True
                    break
                batch.append(text)
            try:
                if batch:
                    sock.sendall(("\n".join(batch) + "\n").encode())
            except OSError:  # the dashboard went away: training goes on, the bridge is quiet
                self.enabled = False
                self._sock = None
                break
        try:
            sock.close()
        except OSError:
            pass

    _LINE_MAX = 65536  # a command line longer than this is not one: dropped, up to its newline

    def _reader(self):
        """The dashboard's commands. A line without its newline past _LINE_MAX is dropped (a
        peer cannot grow the buffer without limit), a malformed command is refused with an
        answer, and the socket's end resumes a pause: a job is never left held by a dashboard
        that has gone."""
        buf, sock, skipping = b"", self._sock, False
        try:
            while True:
                try:
                    data = sock.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    if skipping:  # the end of an overlong line
                        skipping = False
                        continue
                    self._reader_line(raw)
                if len(buf) > self._LINE_MAX:
                    buf, skipping = b"", True
        finally:
            self._paused = False

    def _reader_line(self, raw):
        try:
            msg = json.loads(raw)
        except ValueError:
            return
        if not isinstance(msg, dict) or msg.get("type") != "command":
            return
        cmd, arg = msg.get("cmd"), msg.get("arg", 0)
        if cmd not in _COMMANDS:
            return
        if isinstance(arg, bool) or not isinstance(arg, int):
            self._commands.put((cmd, None))  # refused where commands are answered
            return
        if cmd == "resume":
            self._paused = False
        self._commands.put((cmd, arg))

    def _memory(self):
        while not self._closed and self.enabled:
            fired = self._mem.wait(0.5)
            snap = self._snapshot.is_set()
            if not (fired or snap):
                continue
            self._mem.clear()
            self._snapshot.clear()
            try:
                self._memory_read(snap)
            except Exception:
                pass  # an allocator that cannot be read (no CUDA): nothing to show

    def _memory_read(self, with_segments):
        """memory_stats() every time; memory_snapshot() (the segments and their blocks: the
        largest free block and the map) when asked for and every 5th read."""
        t = self._torch
        if t is None or not t.cuda.is_available():
            return
        st = t.cuda.memory_stats(self.device)
        self._reads += 1
        if not (with_segments or self._reads % 5 == 1):
            reserved = int(st.get("reserved_bytes.all.current", 0))
            allocated = int(st.get("allocated_bytes.all.current", 0))
            free = reserved - allocated
            largest = min(self._largest, free)
            self._event({"type": "mem", "dev": self.device, "t_ns": _now(),
                         "allocated": allocated, "reserved": reserved, "largest_free": largest,
                         "free_blocks": int(st.get("inactive_split.all.current", 0)),
                         "segments": int(st.get("segment.all.current", 0)),
                         "frag": 1.0 - largest / free if free > 0 else 0.0})
            return
        segs = t.cuda.memory_snapshot()
        segs = [s for s in segs if s.get("device", self.device) == self.device]
        largest, total_free, free_blocks = 0, 0, 0
        for s in segs:
            for b in s.get("blocks", []):
                if b.get("state") == "inactive":
                    total_free += b["size"]
                    free_blocks += 1
                    largest = max(largest, b["size"])
        frag = 1.0 - largest / total_free if total_free else 0.0
        self._largest = largest
        now = _now()
        self._event({"type": "mem", "dev": self.device, "t_ns": now,
                     "allocated": int(st.get("allocated_bytes.all.current", 0)),
                     "reserved": int(st.get("reserved_bytes.all.current", 0)),
                     "largest_free": largest, "free_blocks": free_blocks,
                     "segments": int(st.get("segment.all.current", len(segs))), "frag": frag})
        layout = []
        for s in sorted(segs, key=lambda s: s["address"]):
            blocks, off = [], 0
            for b in s.get("blocks", []):
                blocks.append([off, b["size"], 0 if b.get("state") == "inactive" else 1])
                off += b["size"]
            layout.append({"size": s["total_size"], "small": s.get("segment_type") == "small",
                           "truncated": False, "blocks": blocks})
        self._emit({"type": "layout", "dev": self.device, "t_ns": now, "segments": layout,
                    "n_segments": len(layout)})


def _ok(v):
    """A number JSON can carry (not NaN or infinite), or None."""
    return v is None or (v == v and abs(v) != float("inf"))


def _finite(obj):
    return all(not (isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))))
               for v in obj.values())


def _nonan(obj):
    return {k: (None if isinstance(v, float) and (v != v or abs(v) == float("inf")) else v)
            for k, v in obj.items()}


def connect(path=None, *, name=None, device=None, rank=None, control=True, memory_every=20,
            record=None, on_command=None):
    """Attach this process to `ringside watch` (or `ringside agent --watch`) at path, a socket
    path or a unix:PATH URL (default: default_path()). When no
    ringside listens there, the returned bridge does nothing (after one warning), so a script
    keeps its bridge calls whether or not a dashboard is open. record=FILE also writes the
    stream to FILE (for `ringside replay`). control=False: the dashboard's keys are not taken.
    name: the job's name in the dashboard (default: the script's). device: the CUDA/ROCm
    device (default: the current one). rank: the process-group rank (default: $RANK)."""
    return Bridge(path, name=name, device=device, rank=rank, control=control,
                  memory_every=memory_every, record=record, on_command=on_command)
