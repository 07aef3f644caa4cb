"""Imports every command module so that each registers itself on the Typer app.

Add a new command as ``cli/<name>_cmd.py`` and import it here.
"""

from __future__ import annotations

from privaudit.cli import (
    audit_cmd,  # noqa: F401
    demo_cmd,  # noqa: F401
    model_card_cmd,  # noqa: F401
    panoramia_cmd,  # noqa: F401
    record_risk_cmd,  # noqa: F401
    run_cmd,  # noqa: F401
    verify_cmd,  # noqa: F401
    zero_run_cmd,  # noqa: F401
)
