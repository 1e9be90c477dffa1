"""ringside's Python bridge: a PyTorch training script streams its phases, metrics,
synchronize times, process-group calls and caching-allocator state into `ringside watch`, and
takes the dashboard's commands back.

    import ringside
    rs = ringside.connect(epochs=3, batch_size=256)   # a no-op (one warning) when no
                                                      # ringside listens
    rs.watch_distributed()               # collectives and DDP's gradient buckets, timed
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
import inspect
import itertools
import json
import os
import queue
import socket
import stat
import struct
import sys
import threading
import time
import traceback
import warnings

__version__ = "0.1.0"  # ringside's own version (CMakeLists.txt's project VERSION)
__all__ = ["connect", "Bridge", "default_path", "SCHEMA_VERSION", "PHASES", "__version__"]

SCHEMA_VERSION = 1
# The phases ringside colours as its own; any other name is shown as "other".
PHASES = ("load", "vpoc", "features", "h2d", "cleanup", "forward", "backward", "optimizer",
          "sync", "eval", "checkpoint", "paused", "allreduce", "comm-init", "teardown")
_QUEUE_LINES = 16384
_COMMANDS = ("pause", "resume", "chunk_step", "set_chunk", "cleanup", "probe", "stop", "stack")
_STACK_FRAMES = 48  # a thread's innermost frames a stack answer keeps
_STACK_CODE = 160   # characters of a frame's source line

# torch.distributed's collectives the bridge wraps: name, the wire's "coll", the phase shown
# while in it, and the argument whose tensor (or list of them) is the call's bytes (nccl-tests'
# sizes: the whole output of an all-gather, the whole input of a reduce-scatter).
_COLLECTIVES = (
    ("init_process_group", "init", "comm-init", None),
    ("destroy_process_group", "destroy", "teardown", None),
    ("barrier", "barrier", "allreduce", None),
    ("all_reduce", "allreduce", "allreduce", "tensor"),
    ("broadcast", "broadcast", "allreduce", "tensor"),
    ("all_gather", "allgather", "allreduce", "tensor_list"),
    ("all_gather_into_tensor", "allgather", "allreduce", "output_tensor"),
    ("_all_gather_base", "allgather", "allreduce", "output_tensor"),
    ("reduce_scatter", "reduce_scatter", "allreduce", "input_list"),
    ("reduce_scatter_tensor", "reduce_scatter", "allreduce", "input"),
    ("_reduce_scatter_base", "reduce_scatter", "allreduce", "input"),
)

# Per thread: inside a wrapped collective or a DDP bucket's hook, where torch.distributed
# calls (the default hook's all_reduce) are that call's own, not more collectives.
_tls = threading.local()


def _open_record(path):
    """The file of connect(record=path), as `ringside train --record` opens its own: a FIFO or
    a terminal named there (through the user's links) is written in place; anything else at
    path, a file or a link, is replaced at once by a new file, created beside it afresh
    (O_EXCL, O_NOFOLLOW: nothing there is followed or waited on) and renamed over it, so a
    link planted at path is replaced and its target never written."""
    try:
        st = os.stat(path)
        if stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):
            return open(path, "w", buffering=1)
    except FileNotFoundError:
        pass
    if os.path.isdir(path):
        raise IsADirectoryError(21, "a directory is there (name a file in it)", path)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o666)
    except FileExistsError:  # left by a process that had our pid, or planted: the entry goes
        os.unlink(tmp)
        fd = os.open(tmp, flags, 0o666)
    try:
        os.rename(tmp, path)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    return os.fdopen(fd, "w", buffering=1)


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


def _peer_uid(sock):
    """The uid of the process at the other end of a connected AF_UNIX socket (SO_PEERCRED's
    struct ucred: pid, uid, gid), or None where the system has no SO_PEERCRED."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    raw = sock.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    return struct.unpack("3i", raw)[1] & 0xFFFFFFFF


def _env_int(name):
    v = os.environ.get(name, "")
    return int(v) if v.isdigit() else None


def _nbytes(x):
    """The bytes of a tensor or a list of them (0 for anything else)."""
    try:
        if isinstance(x, (list, tuple)):
            return sum(t.numel() * t.element_size() for t in x)
        return x.numel() * x.element_size()
    except Exception:
        return 0


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


class _DDPComm:
    """What a watched DDP model's buckets go through: the hook (the default all-reduce, or the
    one the script registered) and its state, and the model's group number."""
    __slots__ = ("state", "hook", "user", "group")

    def __init__(self, state, hook, group):
        self.state, self.hook, self.user, self.group = state, hook, False, group


class Bridge:
    """A connection to `ringside watch` (or, when there is none, an object whose every call
    does nothing). Made by connect()."""

    def __init__(self, path=None, name=None, device=None, rank=None, control=True,
                 memory_every=20, record=None, on_command=None, epochs=None,
                 steps_per_epoch=None, batch_size=None, _warn=True):
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
        self.epochs = int(epochs) if epochs else 0
        self.steps_per_epoch = int(steps_per_epoch) if steps_per_epoch else None
        self.batch_size = int(batch_size) if batch_size else None
        self._callback = on_command
        self._commands = queue.SimpleQueue()
        self._q = collections.deque()  # append and popleft are atomic: no lock on the hot path
        self._next_seq = itertools.count().__next__  # atomic: lines come from several threads
        self._next_id = itertools.count(1).__next__  # call ids
        self._inflight = {}       # call id -> (thread ident, thread name's JSON)
        self._tnames = {}         # thread ident -> its name's JSON
        self._cseq = {}           # group number -> its collective counter's __next__
        self._groups = {}         # id(process group) -> (its number, the group)
        self._group_lock = threading.Lock()
        self._epoch, self._step = 0, -1
        self._steps = 0
        self._rate, self._win_t, self._win_n, self._full = 0.0, 0, 0, False
        self._call_json = {}      # a call's name -> its JSON
        self._loss = None
        self._phase_heads = {}
        self._reads = 0
        self._largest = 0
        self._paused = False
        self._closed = False
        self._record = None
        self._own = set()         # the bridge's own threads
        self._main = threading.get_ident()  # the training thread: the one that connected
        self._torch = _torch()
        self.device = self._device(device)
        self.rank, self.local_rank, self.world_size, self.group_backend = self._dist_info()
        self.group_id = None      # where the group's ranks met, once init_process_group is seen
        if rank is not None:
            self.rank = int(rank)
        self.name = name or os.path.basename(sys.argv[0] or "python")
        self._sock = None
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(2.0)
            s.connect(self.path)
            s.settimeout(None)
            self._sock = s
        except OSError as e:
            s.close()
            if record is None:
                if _warn:
                    warnings.warn("ringside: no dashboard at %s (%s): the bridge does nothing"
                                  % (self.path, e.strerror or e), stacklevel=3)
                return
        if self._sock is not None and not self._peer_ok(_warn):
            return
        if record:
            self._record = _open_record(record)
        self.enabled = True
        self._emit(self._run_line())
        if self._sock is not None:
            self._thread(self._writer, "ringside-writer")
            self._thread(self._reader, "ringside-reader")
        self._mem = threading.Event()
        self._snapshot = threading.Event()
        self._thread(self._memory, "ringside-memory")
        self._patch_empty_cache()
        atexit.register(self.close)

    def _thread(self, target, name):
        t = threading.Thread(target=target, name=name, daemon=True)
        t.start()
        self._own.add(t.ident)

    def _peer_ok(self, warn):
        """Whether the dashboard at the socket runs as this user or root (SO_PEERCRED). A
        socket of another user's (one who replaced it, or listens on a path named for us) would
        take the job's stream and its controls: refused, and the bridge does nothing."""
        try:
            uid = _peer_uid(self._sock)
        except OSError:
            uid = None
        if uid is None or uid in (os.getuid(), 0):
            return True
        self._sock.close()
        self._sock = None
        if warn:
            warnings.warn("ringside: the dashboard at %s runs as uid %d, not this user (uid %d) "
                          "nor root: refused, the bridge does nothing"
                          % (self.path, uid, os.getuid()), stacklevel=4)
        return False

    # ---- what the script calls ----

    def phase(self, name):
        """A context manager timing one phase: `with rs.phase("forward"): ...`."""
        return _Phase(self, name)

    def step(self, epoch, step, loss=None, val_loss=None, samples_per_s=None):
        """The training position and metrics; also where commands from the dashboard run (in
        this, the training thread), and every memory_every steps the allocator is read. Each
        metric line carries steps_per_s (these calls a second over the last second or so), and
        samples_per_s from connect(batch_size=N) when the script gives none."""
        self._epoch, self._step = int(epoch), int(step)
        if not self.enabled:
            return
        now = _now()
        self._steps += 1
        if self._win_t == 0:
            self._win_t, self._win_n = now, self._steps
        elif now - self._win_t >= 1000000000:
            self._rate = (self._steps - self._win_n) * 1e9 / (now - self._win_t)
            self._win_t, self._win_n, self._full = now, self._steps, True
        elif not self._full and now > self._win_t:  # the first second: since the first step
            self._rate = (self._steps - self._win_n) * 1e9 / (now - self._win_t)
        if loss is not None:
            self._loss = float(loss)
        if (loss is not None or val_loss is not None) and _ok(self._loss) and _ok(val_loss):
            val = ',"val_loss":%r' % float(val_loss) if val_loss is not None else ""
            if samples_per_s is None and self.batch_size:
                samples_per_s = self.batch_size * self._rate
            self._line('{"type":"metric","seq":%d,"dev":%d,"t_ns":%d,"epoch":%d,"step":%d,'
                       '"loss":%r,"samples_per_s":%r,"steps_per_s":%r%s}'
                       % (self._next_seq(), self.device, now, self._epoch, self._step,
                          self._loss, float(samples_per_s or 0.0), self._rate, val))
        if self.memory_every and self._steps % self.memory_every == 0:
            self._mem.set()
        self._run_commands()

    def synchronize(self, what=None):
        """torch.cuda.synchronize() (or what.synchronize() for a stream or an event), timed and
        announced, so a synchronize that never returns shows as a HANG."""
        op = "device"
        if what is not None:
            op = "event" if hasattr(what, "query") and hasattr(what, "elapsed_time") else "stream"
        cid, start = self._enter("torch.cuda.synchronize" if what is None
                                 else op + ".synchronize", op, "sync")
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
            self._leave(cid, start, rc)
            self._event({"type": "sync", "dev": self.device, "op": op, "start_ns": start,
                         "dur_ns": _now() - start, "rc": rc})
        return None

    def timed(self, call, fn, *args, op="device", phase="sync", **kwargs):
        """fn(*args, **kwargs), announced as `call` while it runs (a HANG names it) and timed."""
        cid, start = self._enter(call, op, phase)
        rc = 0
        try:
            return fn(*args, **kwargs)
        except BaseException:
            rc = -1
            raise
        finally:
            self._leave(cid, start, rc)

    def snapshot(self):
        """Read the caching allocator's segments now (on the background thread)."""
        if self.enabled:
            self._snapshot.set()

    def on_command(self, callback):
        """callback(cmd, arg) runs in the training thread at the next step() for each command
        from the dashboard ("chunk_step" with +1/-1, "set_chunk", "cleanup", "probe", "pause",
        "resume", "stop"); it returns a text for the dashboard, or None. Without a callback,
        cleanup runs synchronize + empty_cache + synchronize, probe reads the allocator's
        segments, pause holds the training thread in step() until resume. ("stack" is answered
        by the bridge itself, at once, from its own thread.)"""
        self._callback = callback

    def watch_distributed(self):
        """Announce and time torch.distributed's init_process_group, destroy_process_group,
        barrier, all_reduce, broadcast, all_gather, reduce_scatter (and the tensor forms where
        this torch has them), each numbered on its group (cseq) so that the ranks line up, and
        the gradient buckets of every DistributedDataParallel model made from now on (see
        watch_ddp). Call it before init_process_group for the rank line, and use the functions
        as torch.distributed.X (a name imported before this call is not wrapped)."""
        if self._torch is None or not self.enabled:
            return
        dist = self._torch.distributed
        if not dist.is_available():
            return
        for fname, coll, phase, data in _COLLECTIVES:
            orig = getattr(dist, fname, None)
            if orig is None or getattr(orig, "_ringside", False):
                continue
            setattr(dist, fname, self._wrap_collective(fname, orig, coll, phase, data))
        self._patch_ddp()

    def watch_ddp(self, model):
        """Time a DistributedDataParallel model's gradient buckets: each bucket's all-reduce is
        a call (entered in the communication hook, left when its future completes) and a
        collective named "ddp bucket N". Through a hook that wraps DDP's default all-reduce; a
        hook the script registers afterwards (register_comm_hook) is wrapped in its place.
        Models made after watch_distributed() are watched without this. Returns the model."""
        if self._torch is None or not self.enabled or "_ringside_comm" in model.__dict__:
            return model
        try:
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            register = type(model).register_comm_hook
            register = getattr(register, "__wrapped__", register)
            pg = getattr(model, "process_group", None)
            comm = _DDPComm(pg, default_hooks.allreduce_hook, self._group_no(pg))
            register(model, comm, self._ddp_hook(comm))
        except Exception as e:  # e.g. a hook of the script's registered before this
            warnings.warn("ringside: DDP's gradient buckets are not timed: %s" % e, stacklevel=2)
            return model
        model.__dict__["_ringside_comm"] = comm
        return model

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

    def _dist_info(self):
        """(rank, local_rank, world_size, backend) from torch.distributed when it is
        initialised, else from $RANK, $LOCAL_RANK and $WORLD_SIZE; None where not known."""
        t = self._torch
        rank, world, backend = _env_int("RANK"), _env_int("WORLD_SIZE"), None
        try:
            if t is not None and t.distributed.is_available() and t.distributed.is_initialized():
                d = t.distributed
                rank, world, backend = d.get_rank(), d.get_world_size(), str(d.get_backend())
        except Exception:
            pass
        local = _env_int("LOCAL_RANK")
        if local is None and rank is not None and t is not None:
            try:
                n = t.cuda.device_count() if t.cuda.is_available() else 0
                local = rank % n if n else None
            except Exception:
                pass
        return rank, local, world, backend

    def _who(self, line):
        for key, v in (("rank", self.rank), ("local_rank", self.local_rank),
                       ("world_size", self.world_size), ("group_backend", self.group_backend)):
            if v is not None:
                line[key] = v
        return line

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
                "bridge": __version__, "host": socket.gethostname(), "backend": backend,
                "device": dev_name, "arch": arch, "devices": 1, "device_list": [self.device],
                "start_ns": _now(), "start_wall_ns": time.time_ns(), "epochs": self.epochs,
                "chunk": 0, "name": self.name, "pid": os.getpid(), "control": self.control,
                "config": {"script": sys.argv[0] if sys.argv else "", "torch":
                           getattr(t, "__version__", None)}}
        if self.steps_per_epoch is not None:
            line["steps_per_epoch"] = self.steps_per_epoch
        if self.batch_size is not None:
            line["batch_size"] = self.batch_size
        return self._who(line)

    def _event(self, line):
        line["seq"] = self._next_seq()
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
                   % (head, self._next_seq(), start, end, self._epoch, self._step))

    def _enter(self, call, op, phase, coll=None, group=0, cseq=0, nbytes=0):
        """A call entered (its line said): (its id, its start). Any thread may call this."""
        cid, start = self._next_id(), _now()
        if not self.enabled:
            return cid, start
        ident = threading.get_ident()
        tname = self._tnames.get(ident)
        if tname is None:
            tname = self._tnames[ident] = json.dumps(threading.current_thread().name)
        self._inflight[cid] = (ident, tname)
        cj = self._call_json.get(call)
        if cj is None:
            cj = self._call_json[call] = json.dumps(call)
        coll_part = ('"coll":"%s","group":%d,"cseq":%d,"bytes":%d,' % (coll, group, cseq, nbytes)
                     if coll else "")
        self._line('{"type":"call","id":%d,"dev":%d,"call":%s,"op":"%s",%s"phase":"%s",'
                   '"start_ns":%d,"rank":%d,"thread":%s}'
                   % (cid, self.device, cj, op, coll_part, phase, start,
                      -1 if self.rank is None else self.rank, tname))
        return cid, start

    def _leave(self, cid, start, rc):
        """The call cid left (rc 0, or -1: it raised); its end time."""
        end = _now()
        if self._inflight.pop(cid, None) is not None and self.enabled:
            self._line('{"type":"call","id":%d,"end":true,"start_ns":%d,"end_ns":%d,"rc":%d}'
                       % (cid, start, end, rc))
        return end

    def _collective_done(self, cid, start, rc, coll, nbytes, group, cseq, name):
        end = self._leave(cid, start, rc)
        if self.enabled:
            dur = end - start
            self._line('{"type":"collective","seq":%d,"dev":%d,"t_ns":%d,"op":"%s","calls":1,'
                       '"bytes":%d,"start_ns":%d,"dur_ns":%d,"max_ns":%d,"epoch":%d,"step":%d,'
                       '"rc":%d,"cseq":%d,"group":%d,"name":"%s"}'
                       % (self._next_seq(), self.device, end, coll, nbytes, start, dur, dur,
                          self._epoch, self._step, rc, cseq, group, name))

    def _group_no(self, group):
        """0 for the default group (None, WORLD), then 1, 2, ... in the order of first use."""
        if group is None:
            return 0
        dist = self._torch.distributed
        try:
            if group is dist.group.WORLD or group is dist.GroupMember.WORLD:
                return 0
        except Exception:
            pass
        got = self._groups.get(id(group))
        if got is None:
            with self._group_lock:
                got = self._groups.get(id(group))
                if got is None:  # the group kept, so that its id is not another's
                    got = self._groups[id(group)] = (len(self._groups) + 1, group)
        return got[0]

    def _next_cseq(self, group):
        nxt = self._cseq.get(group)
        if nxt is None:
            with self._group_lock:
                nxt = self._cseq.setdefault(group, itertools.count(1).__next__)
        return nxt()  # atomic: DDP's hook counts from the autograd thread

    def _after_init(self, init_method=None):
        """init_process_group returned: who this process is, in a rank line. Its group_id is
        where the ranks met (the init_method, or env:// with MASTER_ADDR:MASTER_PORT), the same
        for every rank of the group and another for another job's: the dashboard lines up only
        the ranks of one group."""
        self.rank, self.local_rank, self.world_size, self.group_backend = self._dist_info()
        if not isinstance(init_method, str) or init_method in ("", "env://"):
            addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
            init_method = "env://%s:%s" % (addr, port) if addr and port else None
        self.group_id = init_method
        if self.rank is not None:
            line = self._who({"type": "rank", "t_ns": _now()})
            if self.group_id:
                line["group_id"] = self.group_id[:120]
            self._emit(line)

    def _wrap_collective(self, fname, orig, coll, phase, data):
        bridge = self
        call = "torch.distributed." + fname
        try:
            params = list(inspect.signature(orig).parameters)
        except (TypeError, ValueError):
            params = []

        def pos(name):
            return params.index(name) if name in params else -1
        p_group, p_async, p_data = pos("group"), pos("async_op"), pos(data) if data else -1
        counted = coll not in ("init", "destroy")
        non_member = getattr(getattr(self._torch.distributed, "GroupMember", None),
                             "NON_GROUP_MEMBER", object())

        def arg(args, kwargs, p, name, default=None):
            if 0 <= p < len(args):
                return args[p]
            return kwargs.get(name, default)

        def wrapper(*args, **kwargs):
            if not bridge.enabled or getattr(_tls, "depth", 0):
                return orig(*args, **kwargs)  # off, or a call inside one being timed
            group = arg(args, kwargs, p_group, "group")
            if group is non_member:
                return orig(*args, **kwargs)
            g = bridge._group_no(group) if p_group >= 0 else 0
            cseq = bridge._next_cseq(g) if counted else 0
            nbytes = _nbytes(arg(args, kwargs, p_data, data)) if p_data >= 0 else 0
            is_async = p_async >= 0 and bool(arg(args, kwargs, p_async, "async_op", False))
            cid, start = bridge._enter(call, "device", phase, coll, g, cseq, nbytes)
            _tls.depth = 1
            try:
                r = orig(*args, **kwargs)
            except BaseException:
                _tls.depth = 0
                bridge._collective_done(cid, start, -1, coll, nbytes, g, cseq, fname)
                raise
            _tls.depth = 0
            if coll == "init":
                bridge._after_init(kwargs.get("init_method", args[1] if len(args) > 1 else None))
            if is_async and r is not None and hasattr(r, "get_future"):
                try:  # timed until the work's future completes
                    r.get_future().then(
                        lambda f: bridge._future_done(f, cid, start, coll, nbytes, g, cseq,
                                                      fname))
                    return r
                except Exception:
                    pass  # no future for this backend: an instant call
            bridge._collective_done(cid, start, 0, coll, nbytes, g, cseq, fname)
            return r
        wrapper._ringside = True
        wrapper.__wrapped__ = orig
        wrapper.__name__ = wrapper.__qualname__ = fname
        wrapper.__doc__ = orig.__doc__
        return wrapper

    def _future_done(self, fut, cid, start, coll, nbytes, group, cseq, name):
        try:
            fut.value()
            rc = 0
        except Exception:
            rc = -1
        self._collective_done(cid, start, rc, coll, nbytes, group, cseq, name)

    def _ddp_hook(self, comm):
        """DDP's communication hook: comm's hook (the default all-reduce or the script's) with
        each bucket announced at the hook and left when its future completes."""
        bridge = self
        gb = self._torch.distributed.GradBucket
        index = getattr(gb, "index", None) or getattr(gb, "get_index")
        buffer = getattr(gb, "buffer", None) or getattr(gb, "get_tensor")

        def ringside_ddp_hook(state, bucket):
            if not bridge.enabled:
                return comm.hook(comm.state, bucket)
            n = index(bucket)
            nbytes = _nbytes(buffer(bucket))
            g = comm.group
            cseq = bridge._next_cseq(g)
            name = "ddp bucket %d" % n
            cid, start = bridge._enter("torch.distributed.all_reduce (%s)" % name, "device",
                                       "allreduce", "allreduce", g, cseq, nbytes)
            _tls.depth = 1
            try:
                fut = comm.hook(comm.state, bucket)
            except BaseException:
                _tls.depth = 0
                bridge._collective_done(cid, start, -1, "allreduce", nbytes, g, cseq, name)
                raise
            _tls.depth = 0

            def done(f):
                try:
                    value = f.value()
                except BaseException:
                    bridge._collective_done(cid, start, -1, "allreduce", nbytes, g, cseq, name)
                    raise
                bridge._collective_done(cid, start, 0, "allreduce", nbytes, g, cseq, name)
                return value  # what the hook's own future gives: DDP's averaged bucket
            return fut.then(done)
        return ringside_ddp_hook

    def _patch_ddp(self):
        """DistributedDataParallel watched from its construction: our hook registered at the
        end of __init__ (so before any backward), a hook the script registers later put in the
        default's place inside ours (DDP takes a single registration)."""
        try:
            from torch.nn.parallel import DistributedDataParallel as DDP
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        except ImportError:
            return
        if getattr(DDP.__init__, "_ringside", False):
            return
        bridge, orig_init, orig_register = self, DDP.__init__, DDP.register_comm_hook

        def __init__(model, *args, **kwargs):
            orig_init(model, *args, **kwargs)
            if bridge.enabled:
                bridge.watch_ddp(model)

        def register_comm_hook(model, state, hook):
            comm = model.__dict__.get("_ringside_comm")
            if comm is None or comm.user:  # not ours, or a second registration: DDP's answer
                return orig_register(model, state, hook)
            check = getattr(model, "_check_comm_hook", None)
            if check is not None:
                check(hook)
            try:
                model.logger._set_comm_hook_name(hook.__qualname__)
            except Exception:
                pass
            comm.state, comm.hook, comm.user = state, hook, True

        builtins = {}
        kinds = getattr(self._torch.distributed, "BuiltinCommHookType", None)
        if kinds is not None:
            builtins = {getattr(kinds, "ALLREDUCE", None): default_hooks.allreduce_hook,
                        getattr(kinds, "FP16_COMPRESS", None): default_hooks.fp16_compress_hook}

        def builtin(orig):
            def register_builtin_comm_hook(model, comm_hook_type):
                comm = model.__dict__.get("_ringside_comm")
                hook = builtins.get(comm_hook_type)
                if comm is None or comm.user or hook is None:
                    return orig(model, comm_hook_type)
                comm.state, comm.hook, comm.user = model.process_group, hook, True
            register_builtin_comm_hook._ringside = True
            register_builtin_comm_hook.__wrapped__ = orig
            return register_builtin_comm_hook

        for f, orig in ((__init__, orig_init), (register_comm_hook, orig_register)):
            f._ringside = True
            f.__wrapped__ = orig
            f.__doc__ = orig.__doc__
        DDP.__init__, DDP.register_comm_hook = __init__, register_comm_hook
        for name in ("_register_builtin_comm_hook", "register_builtin_comm_hook"):
            orig = DDP.__dict__.get(name)
            if orig is not None:
                setattr(DDP, name, builtin(orig))

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

    # ---- stacks ----

    def _stack_line(self):
        """Where the training thread and every thread with a call in flight are: their Python
        frames, outermost first, the innermost _STACK_FRAMES kept."""
        frames = sys._current_frames()
        names = {t.ident: t.name for t in threading.enumerate()}
        calls = {}
        for _ in range(3):  # another thread may add or end a call meanwhile
            try:
                inflight = list(self._inflight.items())
                break
            except RuntimeError:
                inflight = []
        for cid, (ident, tname) in sorted(inflight):
            calls.setdefault(ident, ([], tname))[0].append(cid)
        order = [self._main] + [i for i in calls if i != self._main]
        threads = []
        for ident in order:
            if ident in self._own or (ident not in frames and ident not in calls):
                continue
            ids, tname = calls.get(ident, ([], None))
            name = names.get(ident) or (json.loads(tname) if tname else "thread %d" % ident)
            stack = []
            f = frames.get(ident)
            if f is not None:
                for fs in traceback.extract_stack(f, limit=_STACK_FRAMES):
                    stack.append({"file": fs.filename, "line": fs.lineno or 0, "func": fs.name,
                                  "code": (fs.line or "")[:_STACK_CODE]})
            threads.append({"name": name, "ident": ident, "calls": ids, "frames": stack})
        del frames
        return {"type": "stack", "t_ns": _now(), "threads": threads}

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
        try:  # the end of the stream for the dashboard (and for our reader's recv)
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()

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
        if cmd == "stack":  # answered here and now: the training thread may be the stuck one
            try:
                self._emit(self._stack_line())
            except Exception:
                pass
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
            record=None, on_command=None, epochs=None, steps_per_epoch=None, batch_size=None):
    """Attach this process to `ringside watch` (or `ringside agent --watch`) at path, a socket
    path or a unix:PATH URL (default: default_path()). When no
    ringside listens there, the returned bridge does nothing (after one warning), so a script
    keeps its bridge calls whether or not a dashboard is open; so does one whose dashboard runs
    as another user (not root). record=FILE also writes the stream to FILE (for `ringside
    replay`): a new file replaces what is there (a link there is replaced, never followed); a
    FIFO or a terminal is written in place. control=False: the dashboard's keys are not taken. name: the job's name in the
    dashboard (default: the script's). device: the CUDA/ROCm device (default: the current
    one). rank: the process-group rank (default: torch.distributed's, else $RANK). epochs,
    steps_per_epoch, batch_size: the run's plan, told to the dashboard (batch_size also makes
    samples_per_s from the steps a second)."""
    return Bridge(path, name=name, device=device, rank=rank, control=control,
                  memory_every=memory_every, record=record, on_command=on_command,
                  epochs=epochs, steps_per_epoch=steps_per_epoch, batch_size=batch_size)
