# The position study.


def position_targets():
    """Final products of the position study for the active config."""
    return []
