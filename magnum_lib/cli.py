"""The ``faux-magnum`` command (placeholder until the engine lands)."""


def main(argv=None) -> int:
    return 0
