"""The release wheel installs into a fresh virtualenv with no Rust toolchain on PATH and
runs ``hebnb demo``.

Opt-in: set ``HEBNB_WHEEL`` to a wheel built by ``scripts/build-wheels.sh`` (``.ci/run``
does). Without it the test skips: a developer's editable install says nothing about the
wheel a user downloads.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

WHEEL = os.environ.get("HEBNB_WHEEL")
ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    not WHEEL, reason="set HEBNB_WHEEL to a wheel built by scripts/build-wheels.sh"
)


def test_wheel_is_manylinux2014_abi3_and_installs_without_rust(tmp_path):
    wheel = Path(WHEEL or "")
    assert wheel.is_file(), wheel
    # installs on glibc >= 2.17 and any CPython >= 3.11
    assert wheel.name.endswith("-cp311-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert "hebnb/_core.pyi" in names and "hebnb/py.typed" in names
    assert any(name.startswith("hebnb/_core") and name.endswith(".so") for name in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bin_dir = venv / "bin"
    # PATH with the venv and the system, without cargo, rustc or rustup
    path = os.pathsep.join([str(bin_dir), "/usr/local/bin", "/usr/bin", "/bin"])
    for tool in ("cargo", "rustc", "rustup"):
        assert shutil.which(tool, path=path) is None, f"{tool} is on the test PATH"
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CARGO", "RUSTUP", "PYTHON", "VIRTUAL_ENV"))
    }
    env["PATH"] = path

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, cwd=tmp_path, env=env, capture_output=True, text=True, check=False
        )

    installed = run(str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheel))
    assert installed.returncode == 0, installed.stderr

    version = run(
        str(bin_dir / "python"), "-c", "import hebnb; print(hebnb.__version__, hebnb.__file__)"
    )
    assert version.returncode == 0, version.stderr
    cargo = re.search(r'^version = "([^"]+)"', (ROOT / "Cargo.toml").read_text(), re.MULTILINE)[1]
    number, location = version.stdout.split()
    assert number == cargo  # one version, Cargo.toml's
    assert Path(location).is_relative_to(venv)  # the installed copy, not the checkout

    demo = run(str(bin_dir / "hebnb"), "demo")
    assert demo.returncode == 0, demo.stderr
    # one row per dataset and method (scikit-learn, Laplace and HEB-M on digits and the
    # synthetic set; HEB-M, AODE and HEB-AODE on the linked table): the method, then
    # accuracy, log-loss, Brier, ECE and fit seconds
    rows = [line.split() for line in demo.stdout.splitlines()]
    methods = ("sklearn", "laplace", "heb-m", "aode", "heb-aode")
    rows = [row for row in rows if len(row) > 6 and row[-6] in methods]
    assert len(rows) == 9, demo.stdout
    for row in rows:
        accuracy, log_loss, brier, ece = (float(value) for value in row[-5:-1])
        assert 0.5 < accuracy <= 1 and 0 < log_loss < 2 and 0 <= brier <= 2 and 0 <= ece <= 1
