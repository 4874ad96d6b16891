"""The extractor package lives next to its command in scripts/; the tests import it from there."""

from __future__ import annotations

import sys

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
