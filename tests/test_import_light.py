"""``import dpframe`` stays light: the heavy optional packages load where first needed."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("IPython", "scipy", "matplotlib", "dpframe.jupyter", "dpframe.audit", "urllib.request")


def _modules_after(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_dpframe_loads_no_heavy_package() -> None:
    loaded = _modules_after("import dpframe")
    assert "dpframe.api.session" in loaded
    assert sorted(set(HEAVY) & loaded) == []


def test_the_probe_sees_a_heavy_import() -> None:
    # the extension's package does load IPython: the probe above can fail
    assert {"IPython", "dpframe.jupyter"} <= _modules_after("import dpframe.jupyter")


def test_lazy_names_are_reachable() -> None:
    loaded = _modules_after(
        "import dpframe as dp\n"
        "assert callable(dp.plot) and callable(dp.audit.audit_query)\n"
        "assert callable(dp.load_ipython_extension)\n"
        "from dpframe import *  # noqa: F403\n"
        "assert audit is dp.audit  # noqa: F405"
    )
    assert "dpframe.audit" in loaded
    assert "IPython" not in loaded  # plotting needs matplotlib only when it draws


def test_public_names_all_resolve() -> None:
    import dpframe as dp

    missing = [name for name in dp.__all__ if not hasattr(dp, name)]
    assert missing == []
