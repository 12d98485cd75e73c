"""Print one line: the Python and the versions of the packages the floors are about."""

import importlib.metadata
import platform

PACKAGES = ["pandas", "numpy", "scipy", "ipython", "ipywidgets", "pyarrow", "dask", "distributed"]


def version(name: str) -> str:
    """The installed version of ``name``, or "-" when it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "-"


print(f"Python {platform.python_version()}, " + ", ".join(f"{n} {version(n)}" for n in PACKAGES))
