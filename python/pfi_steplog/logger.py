"""logger.py — StepLogger: one JSON line per training step, written by rank 0
to the step log pfi reads ($PFI_STEPLOG; docs/formats.md "Step log",
docs/steplog.md).

The line is exactly the valid form src/io/steplog.c accepts:

    {"t_s": 1767225714.6, "step": 121, "tokens": 43008, "step_time_s": 2.1}

t_s is Unix seconds (wall clock, time.time()) at the end of the step and never
goes backwards (a wall clock stepped back repeats the last t_s); throughput
is either tokens (the whole job's, all ranks) and step_time_s (> 0 s), or
tokens_per_s; optional mfu (0..1), tflops (>= 0), loss, lr (finite). A value
the agent would refuse is dropped with a warning (once per kind), never
raised: the training loop must not die for its step log. I/O errors
likewise: warned once, the line lost, the next one tried again.

Each line is one os.write() on a descriptor opened with O_APPEND (so it is
in the kernel at once: nothing to flush, nothing lost if the job is killed),
and a file that ends in a partial line (a job killed mid-write before) gets
a newline first, so the new lines stay whole.
"""

import json
import math
import errno
import os
import stat
import sys
import time
import warnings

__all__ = ["StepLogger", "resolve_rank"]

_RANK_VARS = ("RANK", "SLURM_PROCID", "LOCAL_RANK")


def resolve_rank(rank=None):
    """The process's global rank: `rank` when given; else torch.distributed's
    when it is imported and initialised (never imported here); else $RANK
    (torchrun, accelerate), $SLURM_PROCID (srun), $LOCAL_RANK (single-node
    launchers); else 0."""
    if rank is not None:
        return int(rank)
    dist = sys.modules.get("torch.distributed")
    if dist is not None:
        try:
            if dist.is_available() and dist.is_initialized():
                return int(dist.get_rank())
        except Exception:  # a half-initialised backend: fall back to the environment
            pass
    for var in _RANK_VARS:
        v = os.environ.get(var, "").strip()
        if v:
            try:
                return int(v)
            except ValueError:
                continue
    return 0


def _number(x):
    """float(x) for ints, floats, numpy and 0-d torch scalars; None when absent
    or not a number."""
    if x is None or isinstance(x, bool):
        return None
    try:
        return float(x.item() if hasattr(x, "item") else x)
    except (TypeError, ValueError, RuntimeError):
        return None


class _Step:
    """What `with StepLogger.step(...) as s:` yields: set s.tokens, s.loss,
    s.lr, s.mfu, s.tflops inside the block; the line is written when the block
    ends without an exception, timed by time.perf_counter()."""

    def __init__(self, logger, step, tokens, extra):
        self._logger = logger
        self.step = step
        self.tokens = tokens
        self.loss = extra.pop("loss", None)
        self.lr = extra.pop("lr", None)
        self.mfu = extra.pop("mfu", None)
        self.tflops = extra.pop("tflops", None)
        if extra:
            raise TypeError("step(): unexpected keyword argument(s) %s" % ", ".join(sorted(extra)))
        self.step_time_s = None
        self._t0 = None

    def __enter__(self):
        self._t0 = self._logger._timer()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.step_time_s = self._logger._timer() - self._t0
        if exc_type is None:
            self._logger.log(self.step, tokens=self.tokens, step_time_s=self.step_time_s,
                             loss=self.loss, lr=self.lr, mfu=self.mfu, tflops=self.tflops)
        return False


class StepLogger:
    """Writes pfi's step log from rank 0.

    path: the step log; default $PFI_STEPLOG (unset or empty: the logger does
    nothing, so the same script runs outside pfi). rank: this process's global
    rank (default: resolve_rank() at the first line, so torch.distributed may
    be initialised after the logger is made). Only rank 0 writes.
    """

    def __init__(self, path=None, rank=None, clock=time.time, timer=time.perf_counter,
                 mode=None):
        self.path = os.environ.get("PFI_STEPLOG", "") if path is None else os.fspath(path)
        # a file it creates: 0600 (the job's own), or $PFI_STEPLOG_MODE (e.g.
        # 0640 for a group that reads it) when configured
        if mode is None:
            try:
                mode = int(os.environ.get("PFI_STEPLOG_MODE", "") or "0600", 8) & 0o660
            except ValueError:
                mode = 0o600
        self._mode = mode
        self._rank = rank
        self._clock = clock
        self._timer = timer
        self._fd = None
        self._enabled = None  # decided at the first line
        self._last_t = -math.inf
        self._next_step = 0
        self._warned = set()
        self.lines = 0  # lines written

    # ---- rank and file ----
    @property
    def enabled(self):
        """True when this process writes (rank 0 and a path)."""
        if self._enabled is None:
            self._enabled = bool(self.path) and resolve_rank(self._rank) == 0
        return self._enabled

    def _warn(self, kind, message):
        if kind in self._warned:
            return
        self._warned.add(kind)
        warnings.warn("pfi_steplog: %s" % message, RuntimeWarning, stacklevel=3)

    def _open(self):
        """The agent's rules for a file a job's user can touch
        (docs/security.md): never through a symlink (O_NOFOLLOW), never
        blocked by a FIFO (O_NONBLOCK: the open of a FIFO with no reader
        fails at once instead of hanging the training loop), only a regular
        file is written; anything else is refused with one warning."""
        if self._fd is not None:
            return True
        flags = (os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
                 | os.O_NONBLOCK)
        try:
            fd = os.open(self.path, flags, self._mode)
        except OSError as e:
            if e.errno == errno.ELOOP:
                self._warn("io", "%s is a symbolic link: not followed, step log lines are lost"
                           % self.path)
            elif e.errno in (errno.ENXIO, errno.EISDIR):
                self._warn("io", "%s is not a regular file: step log lines are lost" % self.path)
            else:
                self._warn("io", "%s: %s (step log lines are lost until it can be written)"
                           % (self.path, e.strerror or e))
            return False
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            self._warn("io", "%s is not a regular file: step log lines are lost" % self.path)
            return False
        self._fd = fd
        self._need_newline = self._ends_mid_line()
        return True

    def _ends_mid_line(self):
        try:
            size = os.fstat(self._fd).st_size
            return size > 0 and os.pread(self._fd, 1, size - 1) != b"\n"
        except OSError:
            return False

    def _write(self, data):
        if not self._open():
            return False
        if self._need_newline:
            data = b"\n" + data
        try:
            n = os.write(self._fd, data)
        except OSError as e:
            self._warn("io", "%s: %s (step log lines are lost until it can be written)"
                       % (self.path, e.strerror or e))
            return False
        # a short write (full disk) leaves a partial line: end it before the next
        self._need_newline = n < len(data)
        if self._need_newline:
            self._warn("io", "%s: short write (disk full?): a step log line was lost" % self.path)
        return not self._need_newline

    # ---- lines ----
    def format(self, step, tokens=None, step_time_s=None, tokens_per_s=None, mfu=None,
               tflops=None, loss=None, lr=None, t_s=None):
        """The line log() would write (bytes, newline included), or None with
        a warning when the values do not make a line the agent accepts. t_s:
        Unix seconds (default: the clock now); it never goes backwards."""
        t = _number(self._clock() if t_s is None else t_s)
        if t is None or not math.isfinite(t) or t < 0:
            self._warn("t_s", "t_s %r is not a non-negative Unix time: line dropped" % (t_s,))
            return None
        t = max(t, self._last_t)
        rec = {"t_s": round(t, 6)}
        if step is not None:
            s = _number(step)
            if s is not None and math.isfinite(s):
                rec["step"] = int(s)
        tps = _number(tokens_per_s)
        if tps is not None:
            if not (math.isfinite(tps) and tps >= 0):
                self._warn("tokens_per_s", "tokens_per_s %r is negative or not finite: line dropped"
                           % (tokens_per_s,))
                return None
            rec["tokens_per_s"] = tps
        else:
            k, st = _number(tokens), _number(step_time_s)
            if k is None or st is None:
                self._warn("throughput", "a line needs tokens and step_time_s, or tokens_per_s: "
                           "line dropped")
                return None
            if not (math.isfinite(st) and st > 0):
                self._warn("step_time_s", "step_time_s %r is not positive: line dropped"
                           % (step_time_s,))
                return None
            if not (math.isfinite(k) and k >= 0):
                self._warn("tokens", "tokens %r is negative or not finite: line dropped"
                           % (tokens,))
                return None
            rec["tokens"] = int(k) if k == int(k) else k
            rec["step_time_s"] = st
        for key, val, ok in (("mfu", mfu, lambda v: 0 <= v <= 1),
                             ("tflops", tflops, lambda v: v >= 0),
                             ("loss", loss, lambda v: True), ("lr", lr, lambda v: True)):
            if val is None:
                continue
            v = _number(val)
            if v is None or not math.isfinite(v) or not ok(v):
                # optional: left out, the line still counts
                self._warn(key, "%s %r is out of range or not finite: left out" % (key, val))
                continue
            rec[key] = v
        self._last_t = t
        return (json.dumps(rec, allow_nan=False, separators=(", ", ": ")) + "\n").encode()

    def log(self, step=None, tokens=None, step_time_s=None, tokens_per_s=None, mfu=None,
            tflops=None, loss=None, lr=None, t_s=None):
        """Write one step's line (rank 0 only). tokens: the whole job's tokens
        in this step (all ranks); step_time_s: its wall time in seconds; or
        tokens_per_s for the whole job. step defaults to a counter. Returns
        True when the line was written; never raises for bad values or I/O."""
        if step is None:
            step = self._next_step
        s = _number(step)
        if s is not None and math.isfinite(s):
            self._next_step = int(s) + 1
        if not self.enabled:
            return False
        line = self.format(step, tokens=tokens, step_time_s=step_time_s,
                           tokens_per_s=tokens_per_s, mfu=mfu, tflops=tflops, loss=loss, lr=lr,
                           t_s=t_s)
        if line is None or not self._write(line):
            return False
        self.lines += 1
        return True

    def step(self, tokens=None, step=None, **extra):
        """A context manager timing one step: `with sl.step(tokens=n) as s:`
        ... the line is written when the block ends (not if it raises).
        extra: loss, lr, mfu, tflops (or set them on s inside the block)."""
        return _Step(self, self._next_step if step is None else step, tokens, dict(extra))

    def close(self):
        if getattr(self, "_fd", None) is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False

    def __del__(self):
        self.close()
