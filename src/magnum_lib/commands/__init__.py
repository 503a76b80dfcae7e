"""One module per ``faux-magnum`` subcommand.

Each module ``magnum_lib/commands/<name>.py`` defines ``add(subparsers)``, which declares
the subcommand's flags and sets ``handler`` (a function ``args -> exit status``). The
CLI finds every such module here, so a new command is a new file and nothing else.
Every flag that takes a value declares its type and documented range with a
``_common.FlagType`` (``type=Int(1, 10**6)``, ``Float``, ``Duration``, ``Size``, ``Text``,
``InputFile``, ``StateFile``): the parser refuses anything outside it, and repeated or
empty flags, in one line before the handler runs (``tests/test_cli_fuzz.py`` checks every
command does). Handlers raise :class:`~magnum_lib.base.validate.ParameterError` for what
depends on several flags.
"""
