"""Registers every command on the Typer app, in the order ``privaudit --help`` lists them.

The commands of ``privaudit`` itself (``audit``, ``model-card``, ``run``, ``verify``) live in
this package; each audit procedure's own command lives in its package
(``privaudit.<procedure>.cli``), so that no procedure imports the command line. A command
module imports only light modules at the top (start-up time, ``tests/cli/test_startup.py``).
A new command: write its function, then add one line below.
"""

from __future__ import annotations

from privaudit.canaries.cli import CANARIES_HELP, CANARY_COMMANDS
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

GROUPS = (("canaries", CANARIES_HELP, CANARY_COMMANDS),)
"""Every command group (``privaudit canaries make|audit``): name, help and sub-commands."""

for _name, _command in COMMANDS:
    app.command(_name)(_command)
for _name, _help, _subcommands in GROUPS:
    # the same Typer classes as the app (switches without a value placeholder in the help)
    _group = type(app)(name=_name, help=_help, no_args_is_help=True, cls=app.info.cls)
    for _sub, _function in _subcommands:
        _group.command(_sub)(_function)
    app.add_typer(_group, name=_name)
