"""Registers every command on the Typer app, in the order ``privaudit --help`` lists them.

The commands of ``privaudit`` itself (``audit``, ``model-card``, ``run``, ``verify``) live in
this package; each audit procedure's own command lives in its package
(``privaudit.<procedure>.cli``), so that no procedure imports the command line. A command
module imports only light modules at the top (start-up time, ``tests/cli/test_startup.py``).
A new command: write its function, then add one line below.
"""

from __future__ import annotations

from privaudit.cli import app
from privaudit.cli.audit_cmd import audit_command
from privaudit.cli.model_card_cmd import model_card_command
from privaudit.cli.run_cmd import run
from privaudit.cli.verify_cmd import verify
from privaudit.membership.cli import demo
from privaudit.panoramia.cli import panoramia
from privaudit.record_risk.cli import record_risk_command
from privaudit.zero_run.cli import zero_run_command

COMMANDS = (
    ("audit", audit_command),
    ("demo", demo),
    ("model-card", model_card_command),
    ("panoramia", panoramia),
    ("record-risk", record_risk_command),
    ("run", run),
    ("verify", verify),
    ("zero-run", zero_run_command),
)
"""Every command's name and function, in the order of ``privaudit --help``."""

for _name, _command in COMMANDS:
    app.command(_name)(_command)
