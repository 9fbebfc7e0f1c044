"""tiny_train.py — a real, tiny PyTorch training loop (CPU, one thread) that
writes its step log through pfi_steplog ($PFI_STEPLOG), for
tests/cli/test_steplog_torch.sh. It also measures its own throughput, with
its own timer, inside each step's block, and writes what it measured to
the JSON file named by its first argument, so the test can compare it with
the sweep row `pfi ingest` makes from the step log:

  tokens_per_s_mean   mean over steps of tokens / step time (what
                      `pfi ingest --agg mean` computes from the step log)
  tokens_per_s_top10  mean of the top ceil(0.1 n) of those (the paper's rule,
                      `pfi ingest --throughput-agg top10`)
  tokens_per_s_wall   the loop's own rate: its tokens over the wall time of
                      its training phase, from the end of its first step to
                      the end of its last (what `pfi ingest` gives by
                      default; the first step, torch's warm-up, left out)
  tokens_per_s_min/max, steps, tokens_per_step, first_loss, last_loss

Usage: tiny_train.py OUT.json [STEPS]   (PYTHONPATH must reach pfi_steplog)
"""

import json
import math
import sys
import time

import torch

from pfi_steplog import StepLogger

VOCAB, DIM, BATCH, SEQ = 256, 32, 8, 32


def main():
    out = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(VOCAB, DIM), torch.nn.Linear(DIM, DIM),
                                torch.nn.ReLU(), torch.nn.Linear(DIM, VOCAB))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    tokens = BATCH * SEQ
    rates, losses, ends = [], [], []
    with StepLogger() as sl:
        if not sl.enabled:
            sys.exit("tiny_train.py: PFI_STEPLOG is not set (or this is not rank 0)")
        for _ in range(steps):
            x = torch.randint(0, VOCAB, (BATCH, SEQ))
            y = (x * 7 + 3) % VOCAB  # a mapping the model can learn
            with sl.step(tokens=tokens) as s:
                t0 = time.perf_counter()
                loss = torch.nn.functional.cross_entropy(model(x).view(-1, VOCAB), y.view(-1))
                opt.zero_grad()
                loss.backward()
                opt.step()
                s.loss = loss.item()
                t1 = time.perf_counter()
            ends.append(time.perf_counter())
            rates.append(tokens / (t1 - t0))
            losses.append(s.loss)
        written = sl.lines
    top = sorted(rates, reverse=True)[:math.ceil(0.1 * len(rates))]
    res = {"steps": steps, "lines": written, "tokens_per_step": tokens,
           "tokens_per_s_mean": sum(rates) / len(rates), "tokens_per_s_top10": sum(top) / len(top),
           "tokens_per_s_min": min(rates), "tokens_per_s_max": max(rates),
           "tokens_per_s_wall": tokens * (len(ends) - 1) / (ends[-1] - ends[0]),
           "first_loss": losses[0], "last_loss": losses[-1]}
    with open(out, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main()
