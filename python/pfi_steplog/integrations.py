"""integrations.py — StepLogger as a Hugging Face Transformers TrainerCallback
and as a PyTorch Lightning Callback, each built on first use from the base
class of the installed package (transformers; lightning.pytorch or
pytorch_lightning), so importing pfi_steplog never imports either. Without
the package the name is a class whose construction raises ImportError saying
what to install.

Both log one line per step with the job's tokens in it and step_time_s =
the wall time from the previous step's end to this one's (the first step:
from its start), so the lines add up to the training's wall time, data
loading included, and tokens/s is the job's real rate. On a GPU the host runs
ahead of the device, so single steps look uneven while their sum is right.

The interfaces used are the documented ones:
  transformers.TrainerCallback.on_step_begin/on_step_end(args, state, control,
    **kwargs), state.global_step, state.is_world_process_zero,
    state.num_input_tokens_seen (with TrainingArguments(
    include_num_input_tokens_seen=True)), on_train_end;
  Callback.on_train_batch_start(trainer, pl_module, batch, batch_idx),
    on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx),
    trainer.global_step, trainer.is_global_zero, on_train_end(trainer, pl_module).
"""

import importlib
import time

from .logger import StepLogger

__all__ = ["trainer_callback_class", "lightning_callback_class"]

_cache = {}


def _missing(name, what):
    class Missing:
        def __init__(self, *a, **k):
            raise ImportError("pfi_steplog.%s needs %s, which is not installed (pip install %s); "
                              "StepLogger works without it" % (name, what, what.split()[0]))

    Missing.__name__ = Missing.__qualname__ = name
    return Missing


def _tokens_of(spec, *args):
    """tokens_per_step: a number, or a callable given the hook's arguments."""
    return spec(*args) if callable(spec) else spec


class _Timing:
    """step_time_s from the previous step's end (or this step's start)."""

    def __init__(self, timer):
        self.timer = timer
        self.t_start = self.t_prev_end = None

    def begin(self):
        self.t_start = self.timer()

    def end(self):
        now = self.timer()
        since = self.t_prev_end if self.t_prev_end is not None else self.t_start
        self.t_prev_end = now
        return None if since is None else now - since


def trainer_callback_class():
    """PfiTrainerCallback(tokens_per_step=None, logger=None, path=None):
    tokens_per_step is the job's tokens per optimizer step (all ranks), or a
    callable (args, state) -> tokens; None: the growth of
    state.num_input_tokens_seen."""
    try:
        base = importlib.import_module("transformers").TrainerCallback
    except (ImportError, AttributeError):
        return _missing("PfiTrainerCallback", "transformers")
    if ("hf", base) in _cache:
        return _cache[("hf", base)]

    class PfiTrainerCallback(base):
        def __init__(self, tokens_per_step=None, logger=None, path=None, timer=time.perf_counter):
            self.tokens_per_step = tokens_per_step
            self.logger = logger if logger is not None else StepLogger(path, timer=timer)
            self._timing = _Timing(timer)
            self._seen = None

        def on_train_begin(self, args, state, control, **kwargs):
            self._seen = getattr(state, "num_input_tokens_seen", None)

        def on_step_begin(self, args, state, control, **kwargs):
            self._timing.begin()

        def on_step_end(self, args, state, control, **kwargs):
            dt = self._timing.end()
            if self.tokens_per_step is not None:
                tokens = _tokens_of(self.tokens_per_step, args, state)
            else:
                seen = getattr(state, "num_input_tokens_seen", None)
                tokens = None if seen is None or self._seen is None else seen - self._seen
                self._seen = seen
                if tokens is None:
                    self.logger._warn("hf-tokens", "PfiTrainerCallback: no tokens_per_step and "
                                      "no state.num_input_tokens_seen "
                                      "(include_num_input_tokens_seen=True): nothing logged")
                    return
            if not getattr(state, "is_world_process_zero", True) or dt is None:
                return
            self.logger.log(state.global_step, tokens=tokens, step_time_s=dt)

        def on_train_end(self, args, state, control, **kwargs):
            self.logger.close()

    _cache[("hf", base)] = PfiTrainerCallback
    return PfiTrainerCallback


def _lightning_base():
    for mod in ("lightning.pytorch", "pytorch_lightning"):
        try:
            return importlib.import_module(mod).Callback
        except (ImportError, AttributeError):
            continue
    return None


def lightning_callback_class():
    """PfiLightningCallback(tokens_per_step, logger=None, path=None,
    log_loss=False): tokens_per_step is the job's tokens per training batch
    (all ranks), or a callable (trainer, batch) -> tokens. log_loss takes
    the loss from the step's outputs (a .item() per step: a device sync)."""
    base = _lightning_base()
    if base is None:
        return _missing("PfiLightningCallback", "lightning (or pytorch_lightning)")
    if ("pl", base) in _cache:
        return _cache[("pl", base)]

    class PfiLightningCallback(base):
        def __init__(self, tokens_per_step, logger=None, path=None, log_loss=False,
                     timer=time.perf_counter):
            super().__init__()
            self.tokens_per_step = tokens_per_step
            self.log_loss = log_loss
            self.logger = logger if logger is not None else StepLogger(path, timer=timer)
            self._timing = _Timing(timer)

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx, *rest):
            self._timing.begin()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *rest):
            dt = self._timing.end()
            if not getattr(trainer, "is_global_zero", True) or dt is None:
                return
            loss = None
            if self.log_loss:
                loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
            self.logger.log(trainer.global_step,
                            tokens=_tokens_of(self.tokens_per_step, trainer, batch),
                            step_time_s=dt, loss=loss)

        def on_train_end(self, trainer, pl_module):
            self.logger.close()

    _cache[("pl", base)] = PfiLightningCallback
    return PfiLightningCallback
