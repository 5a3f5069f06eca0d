"""Imported before tau2, by the bridge and by tests/tau2_oracle: tau2's data
beside this checkout (../shared/oracles/tau2) unless TAU2_DATA_DIR says
otherwise; litellm's price table from the package, not fetched over the
network; no *_API_KEY or *_API_TOKEN variable left for tau2's NL judge to
send anywhere, and the judge toolgauge names (TOOLGAUGE_JUDGE_*) kept in
`JUDGE` for the bridge alone; tau2's log (DEBUG on stderr) down to `level`.

    import tau2_ready
    tau2_ready.quiet("WARNING")
"""

import os
import sys
from pathlib import Path

from loguru import logger

os.environ.setdefault(
    "TAU2_DATA_DIR",
    str(Path(__file__).resolve().parents[3] / "shared/oracles/tau2/tau2-bench/data"),
)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# The judge toolgauge gives a judging server (run --judge-model), taken
# out of the environment: only the bridge's judge sends its key, and only
# to its own endpoint.
JUDGE = {
    name[len("TOOLGAUGE_JUDGE_") :].lower(): os.environ.pop(name)
    for name in [n for n in os.environ if n.startswith("TOOLGAUGE_JUDGE_")]
}
for name in [n for n in os.environ if n.endswith(("_API_KEY", "_API_TOKEN"))]:
    del os.environ[name]


def quiet(level):
    logger.remove()
    logger.add(sys.stderr, level=level)
