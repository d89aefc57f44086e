"""examples/fla_gdn.py with one bug planted each, for tests/cli/test_fla_gdn.py: the judge must
name the stage and step each one breaks."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples"))
from fla_gdn import FlaGdn  # noqa: E402


class DecayDropped(FlaGdn):
    """The gate's decay dropped (g taken as 0: exp(g) = 1): the state never forgets. A prefill
    of several tokens already differs, from its second token on."""

    name = "fla-gdn-decay-dropped"

    def log_decay(self, g):
        return np.zeros_like(g)


class StateNotCarried(FlaGdn):
    """Each call starts from a zero state: the prefill is right, every decode step is not."""

    name = "fla-gdn-state-not-carried"

    def state_in(self, prev):
        return np.zeros_like(super().state_in(prev))
