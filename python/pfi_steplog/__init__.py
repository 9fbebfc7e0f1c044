"""pfi_steplog — the training-loop hook of pfi: rank 0 writes one JSON line per
step to $PFI_STEPLOG, the step log pfi-agent and `pfi ingest` read
(docs/formats.md, docs/steplog.md). Standard library only.

    from pfi_steplog import StepLogger
    with StepLogger() as sl:
        for batch in loader:
            with sl.step(tokens=tokens_per_batch):
                train_step(batch)

PfiTrainerCallback (Hugging Face Transformers) and PfiLightningCallback
(PyTorch Lightning) are made on first use from the installed package's base
class; without it they raise ImportError when constructed.
"""

from .logger import StepLogger, resolve_rank

__version__ = "0.1.0"
__all__ = ["StepLogger", "resolve_rank", "PfiTrainerCallback", "PfiLightningCallback"]


def __getattr__(name):
    # built per access (cached per base class), so the integrations are
    # imported only when asked for
    if name not in ("PfiTrainerCallback", "PfiLightningCallback"):
        raise AttributeError("module 'pfi_steplog' has no attribute %r" % name)
    import importlib

    integrations = importlib.import_module(__name__ + ".integrations")
    if name == "PfiTrainerCallback":
        return integrations.trainer_callback_class()
    return integrations.lightning_callback_class()
