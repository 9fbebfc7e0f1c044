"""test_steplog.py — pfi_steplog: the lines StepLogger writes (the exact valid
form of docs/formats.md), t_s never going back, bad values dropped with one
warning and never raised, I/O errors warned once, append mode and a partial
last line, the step context manager, rank 0 only (explicit, torch.distributed,
$RANK / $SLURM_PROCID / $LOCAL_RANK), and the Hugging Face and Lightning
callbacks against minimal stand-ins of their documented base classes
(transformers.TrainerCallback; lightning.pytorch / pytorch_lightning
Callback) injected into sys.modules, since neither package is installable
here. Run by ctest as python_steplog with Debian's /usr/bin/python3."""

import json
import os
import sys
import tempfile
import types
import unittest
import warnings
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pfi_steplog  # noqa: E402
from pfi_steplog import StepLogger, resolve_rank  # noqa: E402

RANK_ENV = {"RANK": "", "SLURM_PROCID": "", "LOCAL_RANK": "", "PFI_STEPLOG": ""}


class Ticks:
    """a clock/timer that returns the values given, one per call"""

    def __init__(self, *values):
        self.values = list(values)

    def __call__(self):
        return self.values.pop(0)


def read_lines(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data.endswith(b"\n"), data
    return [json.loads(x) for x in data.decode().splitlines()]


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "steps.jsonl")
        p = mock.patch.dict(os.environ, RANK_ENV)
        p.start()
        self.addCleanup(p.stop)
        # no torch.distributed unless a test puts one there
        p2 = mock.patch.dict(sys.modules, {"torch.distributed": None})
        p2.start()
        self.addCleanup(p2.stop)
        self.addCleanup(self.dir.cleanup)


class LoggerTest(Base):
    def test_line_is_the_documented_form(self):
        with StepLogger(self.path, clock=Ticks(1767225714.6, 1767225716.0)) as sl:
            self.assertTrue(sl.log(121, tokens=43008, step_time_s=2.1))
            self.assertTrue(sl.log(122, tokens_per_s=20512.3, mfu=0.41, tflops=405.2, loss=2.01,
                                   lr=3e-4))
        with open(self.path) as f:
            first = f.readline()
        self.assertEqual(first,
                         '{"t_s": 1767225714.6, "step": 121, "tokens": 43008, "step_time_s": 2.1}\n')
        b = read_lines(self.path)[1]
        self.assertEqual(b, {"t_s": 1767225716.0, "step": 122, "tokens_per_s": 20512.3,
                             "mfu": 0.41, "tflops": 405.2, "loss": 2.01, "lr": 0.0003})

    def test_path_from_environment_and_unset(self):
        os.environ["PFI_STEPLOG"] = self.path
        sl = StepLogger()
        self.assertTrue(sl.log(0, tokens=10, step_time_s=1))
        sl.close()
        self.assertEqual(len(read_lines(self.path)), 1)
        os.environ["PFI_STEPLOG"] = ""
        sl = StepLogger()
        self.assertFalse(sl.enabled)
        self.assertFalse(sl.log(1, tokens=10, step_time_s=1))

    def test_step_counter_and_scalars(self):
        class Scalar:  # a 0-d tensor or numpy scalar
            def __init__(self, v):
                self.v = v

            def item(self):
                return self.v

        with StepLogger(self.path) as sl:
            sl.log(tokens=Scalar(512), step_time_s=0.5, loss=Scalar(1.5))
            sl.log(tokens=512, step_time_s=0.25)
            sl.log(10, tokens=512, step_time_s=0.25)
            sl.log(tokens=512, step_time_s=0.25)
        lines = read_lines(self.path)
        self.assertEqual([x["step"] for x in lines], [0, 1, 10, 11])
        self.assertEqual(lines[0]["tokens"], 512)
        self.assertEqual(lines[0]["loss"], 1.5)

    def test_t_s_never_goes_back(self):
        with StepLogger(self.path, clock=Ticks(100.0, 99.0, 101.0)) as sl:
            for k in range(3):
                sl.log(k, tokens=1, step_time_s=1)
        self.assertEqual([x["t_s"] for x in read_lines(self.path)], [100.0, 100.0, 101.0])

    def test_bad_values_dropped_with_one_warning(self):
        with StepLogger(self.path) as sl, warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertFalse(sl.log(0, tokens=100, step_time_s=0))
            self.assertFalse(sl.log(1, tokens=100, step_time_s=0))
            self.assertFalse(sl.log(2, tokens=-1, step_time_s=1))
            self.assertFalse(sl.log(3, tokens=100))
            self.assertFalse(sl.log(4, tokens_per_s=float("nan")))
            self.assertFalse(sl.log(5, tokens=1, step_time_s=1, t_s=-5))
            # optional values out of range are left out, the line stays
            self.assertTrue(sl.log(6, tokens=100, step_time_s=1, mfu=1.5, loss=float("inf"),
                                   tflops=-1, lr="x"))
        kinds = [str(x.message) for x in w]
        self.assertEqual(sum("step_time_s" in k and "not positive" in k for k in kinds), 1, kinds)
        self.assertEqual(len(kinds), 9, kinds)  # one per kind
        lines = read_lines(self.path)
        self.assertEqual(lines, [{"t_s": lines[0]["t_s"], "step": 6, "tokens": 100,
                                  "step_time_s": 1.0}])

    def test_io_error_warns_once_never_raises(self):
        sl = StepLogger(os.path.join(self.dir.name, "no", "such", "dir.jsonl"))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for k in range(3):
                self.assertFalse(sl.log(k, tokens=1, step_time_s=1))
        self.assertEqual(len(w), 1)
        self.assertIn("No such file or directory", str(w[0].message))
        sl.close()

    def test_files_a_user_can_touch(self):
        # created 0600 (group-readable only where configured)
        with StepLogger(self.path, clock=Ticks(1.0)) as sl:
            self.assertTrue(sl.log(0, tokens=1, step_time_s=1))
        self.assertEqual(os.stat(self.path).st_mode & 0o777, 0o600)
        p2 = self.path + ".g"
        with StepLogger(p2, clock=Ticks(1.0), mode=0o640) as sl:
            sl.log(0, tokens=1, step_time_s=1)
        self.assertEqual(os.stat(p2).st_mode & 0o777, 0o640)
        # a symlink is never followed: the target stays untouched
        target = os.path.join(self.dir.name, "target")
        with open(target, "w") as f:
            f.write("keep\n")
        link = os.path.join(self.dir.name, "link.jsonl")
        os.symlink(target, link)
        # a FIFO never blocks (no reader: the open fails at once); a
        # directory is not a regular file; each refused with one warning
        fifo = os.path.join(self.dir.name, "fifo.jsonl")
        os.mkfifo(fifo)
        for path, what in ((link, "symbolic link"), (fifo, "regular file"), (self.dir.name, "regular file")):
            sl = StepLogger(path, clock=Ticks(*[float(k) for k in range(1, 4)]))
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                for k in range(3):
                    self.assertFalse(sl.log(k, tokens=1, step_time_s=1))
            self.assertEqual(len(w), 1, [str(x.message) for x in w])
            self.assertIn(what, str(w[0].message))
            sl.close()
        with open(target) as f:
            self.assertEqual(f.read(), "keep\n")

    def test_append_and_partial_last_line(self):
        with open(self.path, "w") as f:
            f.write('{"t_s": 1, "tokens_per_s": 5}\n{"t_s": 2, "tok')  # a job killed mid-line
        with StepLogger(self.path, clock=Ticks(3.0, 4.0)) as sl:
            sl.log(0, tokens=1, step_time_s=1)
            sl.log(1, tokens=1, step_time_s=1)
        with open(self.path) as f:
            text = f.read().splitlines()
        self.assertEqual(text[0], '{"t_s": 1, "tokens_per_s": 5}')
        self.assertEqual(text[1], '{"t_s": 2, "tok')
        self.assertEqual(json.loads(text[2])["t_s"], 3.0)
        self.assertEqual(json.loads(text[3])["t_s"], 4.0)
        self.assertEqual(len(text), 4)

    def test_step_context_manager(self):
        sl = StepLogger(self.path, clock=Ticks(50.0, 51.0), timer=Ticks(10.0, 10.25, 20.0, 20.5,
                                                                         30.0, 31.0))
        with sl.step(tokens=1000) as s:
            s.loss = 2.5
        with self.assertRaises(KeyError):
            with sl.step(tokens=1000):
                raise KeyError("a failed step")  # propagates, and writes nothing
        with sl.step(tokens=1000, lr=0.1) as s:
            pass
        self.assertEqual(s.step_time_s, 1.0)
        sl.close()
        lines = read_lines(self.path)
        self.assertEqual(lines, [
            {"t_s": 50.0, "step": 0, "tokens": 1000, "step_time_s": 0.25, "loss": 2.5},
            {"t_s": 51.0, "step": 1, "tokens": 1000, "step_time_s": 1.0, "lr": 0.1}])
        with self.assertRaises(TypeError):
            sl.step(tokens=1, bogus=2)


class RankTest(Base):
    def test_environment(self):
        self.assertEqual(resolve_rank(), 0)
        cases = [({"RANK": "3"}, 3), ({"SLURM_PROCID": "2"}, 2), ({"LOCAL_RANK": "1"}, 1),
                 ({"RANK": "0", "LOCAL_RANK": "1"}, 0), ({"RANK": "junk", "LOCAL_RANK": "4"}, 4)]
        for env, want in cases:
            with mock.patch.dict(os.environ, env):
                self.assertEqual(resolve_rank(), want, env)
        self.assertEqual(resolve_rank(5), 5)

    def test_only_rank_zero_writes(self):
        with mock.patch.dict(os.environ, {"RANK": "1"}):
            sl = StepLogger(self.path)
            self.assertFalse(sl.log(0, tokens=1, step_time_s=1))
        self.assertFalse(os.path.exists(self.path))
        with mock.patch.dict(os.environ, {"RANK": "1"}):
            sl = StepLogger(self.path, rank=0)
            self.assertTrue(sl.log(0, tokens=1, step_time_s=1))
            sl.close()

    def test_torch_distributed_when_initialised(self):
        dist = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True,
                                     get_rank=lambda: 2)
        with mock.patch.dict(sys.modules, {"torch.distributed": dist}):
            self.assertEqual(resolve_rank(), 2)
            # decided at the first line, not when the logger is made
            sl = StepLogger(self.path)
            self.assertFalse(sl.log(0, tokens=1, step_time_s=1))
            dist.is_initialized = lambda: False
            self.assertEqual(resolve_rank(), 0)


def fake_transformers():
    class TrainerCallback:  # transformers.TrainerCallback: every hook a no-op
        def on_train_begin(self, args, state, control, **kwargs):
            pass

        def on_step_begin(self, args, state, control, **kwargs):
            pass

        def on_step_end(self, args, state, control, **kwargs):
            pass

        def on_train_end(self, args, state, control, **kwargs):
            pass

    return types.SimpleNamespace(TrainerCallback=TrainerCallback)


def fake_lightning():
    class Callback:  # lightning.pytorch.Callback
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            pass

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            pass

        def on_train_end(self, trainer, pl_module):
            pass

    return types.SimpleNamespace(Callback=Callback)


class IntegrationTest(Base):
    def test_missing_packages_raise_on_use(self):
        with mock.patch.dict(sys.modules, {"transformers": None, "lightning": None,
                                           "lightning.pytorch": None, "pytorch_lightning": None}):
            cls = pfi_steplog.PfiTrainerCallback
            with self.assertRaisesRegex(ImportError, "needs transformers"):
                cls(tokens_per_step=1)
            with self.assertRaisesRegex(ImportError, "lightning"):
                pfi_steplog.PfiLightningCallback(tokens_per_step=1)
        with self.assertRaises(AttributeError):
            pfi_steplog.NoSuchThing

    def test_hugging_face_callback(self):
        tf = fake_transformers()
        with mock.patch.dict(sys.modules, {"transformers": tf}):
            cls = pfi_steplog.PfiTrainerCallback
            self.assertTrue(issubclass(cls, tf.TrainerCallback))
            self.assertIs(cls, pfi_steplog.PfiTrainerCallback)  # cached per base
            # step 1 from its begin (0.5 s), step 2 from step 1's end (1.0 s: data loading counts)
            cb = cls(tokens_per_step=8192, path=self.path, timer=Ticks(1.0, 1.5, 2.0, 2.5))
            state = types.SimpleNamespace(global_step=0, is_world_process_zero=True)
            cb.on_train_begin(None, state, None)
            for _ in range(2):
                cb.on_step_begin(None, state, None)
                state.global_step += 1
                cb.on_step_end(None, state, None, model=None)
            cb.on_train_end(None, state, None)
        lines = read_lines(self.path)
        self.assertEqual([(x["step"], x["tokens"], x["step_time_s"]) for x in lines],
                         [(1, 8192, 0.5), (2, 8192, 1.0)])

    def test_hugging_face_tokens_seen_and_other_ranks(self):
        tf = fake_transformers()
        with mock.patch.dict(sys.modules, {"transformers": tf}):
            cls = pfi_steplog.PfiTrainerCallback
            cb = cls(path=self.path, timer=Ticks(0.0, 1.0, 1.0, 3.0))
            state = types.SimpleNamespace(global_step=0, is_world_process_zero=True,
                                          num_input_tokens_seen=100)
            cb.on_train_begin(None, state, None)
            for seen in (1100, 5100):
                cb.on_step_begin(None, state, None)
                state.global_step += 1
                state.num_input_tokens_seen = seen
                cb.on_step_end(None, state, None)
            cb.on_train_end(None, state, None)
            # not the world's process zero: nothing
            other = cls(tokens_per_step=1, path=self.path + ".1", timer=Ticks(0.0, 1.0))
            st1 = types.SimpleNamespace(global_step=0, is_world_process_zero=False)
            other.on_step_begin(None, st1, None)
            other.on_step_end(None, st1, None)
        lines = read_lines(self.path)
        self.assertEqual([(x["tokens"], x["step_time_s"]) for x in lines],
                         [(1000, 1.0), (4000, 2.0)])
        self.assertFalse(os.path.exists(self.path + ".1"))

    def test_lightning_callback(self):
        pl = fake_lightning()
        for mods in ({"lightning": types.SimpleNamespace(pytorch=pl), "lightning.pytorch": pl},
                     {"lightning": None, "lightning.pytorch": None, "pytorch_lightning": pl}):
            path = self.path + str(len(mods))
            with mock.patch.dict(sys.modules, mods):
                cls = pfi_steplog.PfiLightningCallback
                self.assertTrue(issubclass(cls, pl.Callback))
                loss = types.SimpleNamespace(item=lambda: 0.75)
                cb = cls(tokens_per_step=lambda trainer, batch: len(batch) * trainer.world_size,
                         path=path, log_loss=True, timer=Ticks(5.0, 5.2, 5.3, 5.6))
                trainer = types.SimpleNamespace(global_step=0, is_global_zero=True, world_size=4)
                for idx in range(2):
                    cb.on_train_batch_start(trainer, None, [1, 2, 3], idx)
                    trainer.global_step += 1
                    cb.on_train_batch_end(trainer, None, {"loss": loss}, [1, 2, 3], idx)
                cb.on_train_end(trainer, None)
            lines = read_lines(path)
            self.assertEqual([(x["step"], x["tokens"], x["loss"]) for x in lines],
                             [(1, 12, 0.75), (2, 12, 0.75)])
            self.assertAlmostEqual(lines[0]["step_time_s"], 0.2)
            self.assertAlmostEqual(lines[1]["step_time_s"], 0.4)

    def test_lightning_other_ranks_write_nothing(self):
        pl = fake_lightning()
        with mock.patch.dict(sys.modules, {"lightning": None, "lightning.pytorch": None,
                                           "pytorch_lightning": pl}):
            cb = pfi_steplog.PfiLightningCallback(tokens_per_step=10, path=self.path,
                                                  timer=Ticks(0.0, 1.0))
            trainer = types.SimpleNamespace(global_step=1, is_global_zero=False)
            cb.on_train_batch_start(trainer, None, None, 0)
            cb.on_train_batch_end(trainer, None, None, None, 0)
        self.assertFalse(os.path.exists(self.path))


if __name__ == "__main__":
    unittest.main()
