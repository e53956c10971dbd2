"""Writes src/gamma_difference_reference.rs: high-precision values of
ln Γ(a+n) - ln Γ(a) and ψ(a+n) - ψ(a) (mpmath, 50 digits) that the Rust unit tests of
`gamma_differences` compare against, for a across [1e-6, 2e19] and whole and fractional n.

Run from the repository root: python scripts/gamma_difference_reference.py
"""

from pathlib import Path

import mpmath

mpmath.mp.dps = 50

A_VALUES = [
    "1e-6",
    "3e-4",
    "0.01",
    "0.3",
    "1",
    "2.5",
    "9.99",
    "10.5",
    "77",
    "1e3",
    "4.2e4",
    "1e6",
    "1e8",
    "2e19",
]
N_VALUES = ["1e-9", "0.001", "0.5", "1", "2", "7", "31", "33", "150.25", "1e4", "3.5e6", "3.7e13"]


def main() -> None:
    rows = []
    for a_text in A_VALUES:
        for n_text in N_VALUES:
            a, n = mpmath.mpf(a_text), mpmath.mpf(n_text)
            lg = mpmath.loggamma(a + n) - mpmath.loggamma(a)
            dg = mpmath.digamma(a + n) - mpmath.digamma(a)
            rows.append(
                f"    ({a_text}_f64, {n_text}_f64, {mpmath.nstr(lg, 20, min_fixed=-1, max_fixed=-1)}, "
                f"{mpmath.nstr(dg, 20, min_fixed=-1, max_fixed=-1)}),"
            )
    out = Path(__file__).resolve().parents[1] / "src" / "gamma_difference_reference.rs"
    out.write_text(
        "//! High-precision reference values (a, n, ln Γ(a+n) - ln Γ(a), ψ(a+n) - ψ(a)),\n"
        "//! generated with mpmath at 50 digits by scripts/gamma_difference_reference.py.\n"
        "//! The digits beyond f64 are kept on purpose: they are the reference.\n"
        "#![allow(clippy::excessive_precision, clippy::approx_constant)]\n\n"
        "#[rustfmt::skip]\n"
        "pub const REFERENCE: &[(f64, f64, f64, f64)] = &[\n" + "\n".join(rows) + "\n];\n"
    )


if __name__ == "__main__":
    main()
