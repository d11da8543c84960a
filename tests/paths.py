"""Where the tests find the checkout and the shared data beside it.

pytest does not make ``conftest.py`` importable, so the constants live here; ``conftest.py`` exposes the
same paths as fixtures for tests that prefer them.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout: Snakefile, config.yaml, src/
SHARED = ROOT.parent / "shared"  # data too large to commit, beside the checkout
SHARED_WMT = SHARED / "data" / "wmt"  # train_sample/, sgm_newstest2014-full/, plain/
SHARED_PTB = SHARED / "data" / "ptb"  # wsj_sample/, evalb_edge/, COLLINS.prm
