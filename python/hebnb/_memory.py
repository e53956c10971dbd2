"""How much memory this process may use: what input-sized allocations are checked against
before they are made (pure Python, so that any module can ask without the core)."""

from __future__ import annotations

import os


def memory_budget_bytes() -> int:
    """The memory this process may use: installed memory (16 GiB where the platform
    does not say), or less where an address-space limit (``ulimit -v``) is set."""
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        physical = 16 * 2**30
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):
        limit = -1
    return physical if limit < 0 else min(physical, limit)
