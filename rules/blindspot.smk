# The blindspot study.


def blindspot_targets():
    """Final products of the blindspot study for the active config."""
    return []
