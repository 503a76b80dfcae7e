"""One module per ``faux-magnum`` subcommand.

Each module ``magnum_lib/commands/<name>.py`` defines ``add(subparsers)``, which declares
the subcommand's flags and sets ``handler`` (a function ``args -> exit status``). The
CLI finds every such module here, so a new command is a new file and nothing else.
Handlers raise :class:`~magnum_lib.engine.errors.ParameterError` for bad values; shared
flag parsers live in ``_common.py``.
"""
