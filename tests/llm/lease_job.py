"""A model job for the lease tests, run as its own process: loads the embedded model, optionally
says it is ready and waits for a go signal (files), runs N requests through ``generate`` or
``generate_and_probe_many``, and prints its engine counters and texts as one JSON line.

    python lease_job.py REGISTRY WEIGHTS CACHE_DIR N MODE [READY_FILE GO_FILE]
"""

import json
import logging
import sys
import time
from dataclasses import asdict
from pathlib import Path

from thinkbias.llm import load_model_spec, open_engine
from thinkbias.llm.types import YES_NO, Request, Sampling


def requests(n: int) -> list[Request]:
    return [Request.chat(f"Count from {i} to {i + 30}.", sampling=Sampling(max_tokens=32)) for i in range(n)]


def main() -> None:
    registry, weights, cache_dir, n, mode = sys.argv[1:6]
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(name)s %(message)s")
    spec = load_model_spec(registry, "smollm2-135m", weights=weights)
    with open_engine(spec, cache_dir, n_threads=1) as eng:
        if len(sys.argv) > 7:
            Path(sys.argv[6]).touch()
            while not Path(sys.argv[7]).exists():
                time.sleep(0.02)
        reqs = requests(int(n))
        if mode == "generate":
            gens = eng.generate(reqs)
        else:
            gens = [g for g, _ in eng.generate_and_probe_many(reqs, [0.0, 1.0], "\nAnswer:", YES_NO)]
        print(
            json.dumps(
                {
                    **asdict(eng.stats),
                    "texts": [g.text for g in gens],
                    "completion_tokens": [g.completion_tokens for g in gens],
                    "cached": [g.cached for g in gens],
                }
            )
        )


if __name__ == "__main__":
    main()
